package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

var (
	_ store.Notifier       = (*Store)(nil)
	_ store.CancelNotifier = (*Store)(nil)
)

// Subscribe implements store.Notifier with LISTEN (see listener). A
// transaction that enqueues work notifies the schema's ready channel on
// commit when the queue was empty, and in any case when this store last
// forced a notification [Config.NotifyEvery] ago (see notifyDue). If the connection is lost, the listener reconnects in the
// background and sends one hint after it does, since notifications may
// have been missed. LISTEN needs a session that lasts: the store listens
// on [Config.SessionURL], or on its pool when that reaches Postgres itself;
// otherwise (a transaction-pooling PgBouncer and no session URL) Subscribe
// fails with [ErrNoSession] and workers poll, which stays the truth
// anyway.
func (s *Store) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	l := &s.listener
	err := s.subscribe(ctx, func() { l.ready[ch] = struct{}{} }, func() { delete(l.ready, ch) })
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	return ch, nil
}

// SubscribeCancels implements store.CancelNotifier with LISTEN (see
// listener). CancelRun notifies the schema's cancel channel, with the run
// id as the payload, in its transaction: the id arrives once the
// cancellation is committed. Ids sent while the connection was lost are
// not sent again; heartbeats deliver those cancellations.
func (s *Store) SubscribeCancels(ctx context.Context) (<-chan dag.RunID, error) {
	ch := make(chan dag.RunID, 64)
	l := &s.listener
	err := s.subscribe(ctx, func() { l.cancels[ch] = struct{}{} }, func() { delete(l.cancels, ch) })
	if err != nil {
		return nil, fmt.Errorf("subscribe to cancellations: %w", err)
	}
	return ch, nil
}

// listener is the store's LISTEN connection, on both of the schema's
// channels, shared by every subscription of the store (Subscribe and
// SubscribeCancels, of any number of engines) while one lasts: a worker
// holds one connection out of the pool for its notifications, not one per
// kind.
type listener struct {
	mu      sync.Mutex
	subs    int // subscriptions whose ctx is not done
	ready   map[chan struct{}]struct{}
	cancels map[chan dag.RunID]struct{}
	stop    context.CancelFunc // ends the connection's goroutine; nil when none runs
}

// subscribe adds a subscription, with add, under the listener's lock,
// starting the listening connection if none runs, and removes it, with
// remove, when ctx is done; the last one to go stops the connection.
func (s *Store) subscribe(ctx context.Context, add, remove func()) error {
	l := &s.listener
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop == nil {
		conn, cancelChannel, err := s.listen(ctx)
		if err != nil {
			return err
		}
		lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		l.stop = stop
		go s.receive(lctx, conn, cancelChannel)
	}
	if l.ready == nil {
		l.ready = make(map[chan struct{}]struct{})
		l.cancels = make(map[chan dag.RunID]struct{})
	}
	add()
	l.subs++
	go func() {
		<-ctx.Done()
		l.mu.Lock()
		defer l.mu.Unlock()
		remove()
		if l.subs--; l.subs == 0 {
			l.stop()
			l.stop = nil
		}
	}()
	return nil
}

// receive hands the notifications of conn to the subscribers until ctx
// ends, reconnecting when the connection fails.
func (s *Store) receive(ctx context.Context, conn *pgx.Conn, cancelChannel string) {
	defer func() {
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err == nil {
			if n.Channel != cancelChannel {
				s.listener.hint()
			} else if id, err := dag.ParseRunID(n.Payload); err == nil {
				s.listener.cancelled(id)
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		// The connection failed: reconnect until ctx ends.
		_ = conn.Close(context.WithoutCancel(ctx))
		conn = nil
		for conn == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			if c, channel, err := s.listen(ctx); err == nil {
				conn, cancelChannel = c, channel
			}
		}
		s.listener.hint()
	}
}

// hint tells every Subscribe subscriber that work may be ready.
func (l *listener) hint() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.ready {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// cancelled tells every SubscribeCancels subscriber that run id was
// cancelled, unless its channel is full.
func (l *listener) cancelled(id dag.RunID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.cancels {
		select {
		case ch <- id:
		default:
		}
	}
}

// listen opens a connection whose session lasts (sessionConn) and
// listens on the schema's channels. It returns the connection and the
// name of the cancel channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, string, error) {
	conn, err := s.sessionConn(ctx)
	if err != nil {
		return nil, "", err
	}
	ready, err := s.q.NotifyChannel(ctx, conn)
	var cancelled string
	if err == nil {
		cancelled, err = s.q.CancelChannel(ctx, conn)
	}
	for _, channel := range []string{cancelled, ready} {
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
		}
	}
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, "", fmt.Errorf("listen: %w", err)
	}
	return conn, cancelled, nil
}

// DefaultNotifyEvery is the default of [Config.NotifyEvery].
const DefaultNotifyEvery = 50 * time.Millisecond

// notifyDue reports whether the next enqueue should notify even though the
// queue holds work already, and if so counts it as done.
//
// NOTIFY serializes commits: a notifying transaction takes a database-wide
// lock before its commit record and holds it until the record is flushed,
// so notifying commits are flushed one by one. Under load, a notification
// at every enqueue put a good share of all waits behind that lock, to wake
// workers that were busy anyway (see docs/performance.md, "Notifications
// now and then under load"). An enqueue into an empty queue always
// notifies (the SQL sees it), which is how an idle worker hears of new
// work; otherwise one enqueue every NotifyEvery does, in case a worker
// went idle on a claim that raced with an enqueue. Polling is the truth
// either way.
func (s *Store) notifyDue() bool {
	if s.notifyEvery <= 0 {
		return true
	}
	now := time.Now().UnixNano()
	last := s.lastNotify.Load()
	return now-last >= int64(s.notifyEvery) && s.lastNotify.CompareAndSwap(last, now)
}

// enqueue runs the Enqueue statement on db, notifying as notifyDue says.
func (s *Store) enqueue(ctx context.Context, db dbsqlc.DBTX, ep dbsqlc.EnqueueParams) error {
	ep.ForceNotify = s.notifyDue()
	if !ep.Now.Valid {
		ep.Now = s.clock() // when a parked task's bucket is due
	}
	// Enqueue runs the generic plan its connection cached: left to choose,
	// Postgres planned about half of the enqueues of a steady rate of
	// triggers for their parameters (after an ANALYZE or a vacuum had it
	// plan again, the generic plan's estimate lost to the custom ones it
	// had averaged), and planning this statement costs more than running
	// it (see docs/performance.md, "Enqueues keep their generic plan").
	// The transaction (a caller's, for CreateRunsTx) gets its own setting
	// back after.
	return s.planned(ctx, db, s.q.GenericPlanBegin, s.q.GenericPlanEnd, func(db dbsqlc.DBTX) error {
		return s.q.Enqueue(ctx, db, ep)
	})
}

// enqueuePlain is enqueue by EnqueuePlain, for tasks none of which has a
// rate limit.
func (s *Store) enqueuePlain(ctx context.Context, db dbsqlc.DBTX, ep dbsqlc.EnqueueParams) error {
	pp := dbsqlc.EnqueuePlainParams{
		ForceNotify: s.notifyDue(),
		RunIds:      ep.RunIds, Tasks: ep.Tasks, Signatures: ep.Signatures, Tenants: ep.Tenants, IfQueued: ep.IfQueued,
	}
	return s.planned(ctx, db, s.q.GenericPlanBegin, s.q.GenericPlanEnd, func(db dbsqlc.DBTX) error {
		return s.q.EnqueuePlain(ctx, db, pp)
	})
}
