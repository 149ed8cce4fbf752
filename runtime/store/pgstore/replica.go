package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// Replicated is a store for operators (the console, dagen runs) that reads
// from a streaming replica and acts on the primary. It is the primary's
// Store with the operator reads (lists, counts, a run with its tasks and
// events, queue places, workers, backlog, schedules) sent to the replica;
// every write, and every read not listed here, goes to the primary, so a
// read forgotten here is correct, only not offloaded.
//
// It reads its own writes: an operator action made through it (cancel,
// retry, signal, a schedule's pause, resume or deletion) records the
// primary's WAL position, and the reads after it wait, up to
// [ReplicaConfig.Wait], for the replica to replay that far; when it does
// not, they read from the primary until it has. A replica that fails a
// read is left alone for [ReplicaConfig.Retry] while the primary serves.
// [Replicated.Source] says which, for pages to show.
//
// The replica's store never migrates and never writes: it is opened with
// [New] on the replica's pool (which checks its schema's version with
// reads), on the first read, and again after a failure.
//
// Workers use the primary's Store: their writes are not tracked here.
type Replicated struct {
	*Store // the primary

	pool *pgxpool.Pool // the replica's
	cfg  ReplicaConfig

	opening sync.Mutex // one New on the replica at a time

	mu       sync.Mutex
	replica  *Store    // nil until New succeeded on pool
	fence    int64     // the primary's WAL position after the latest action
	replayed int64     // the furthest the replica was seen to have replayed
	gaveUp   int64     // the fence a read waited for in vain: later reads do not wait for it again
	downTill time.Time // reads skip the replica until then, because of downErr
	downErr  error
}

// ReplicaConfig configures a [Replicated]. The zero value (or a nil
// *ReplicaConfig) is ready to use.
type ReplicaConfig struct {
	// Wait bounds how long a read waits for the replica to replay an
	// action made through the store before it reads from the primary.
	// Zero: 2 s.
	Wait time.Duration
	// Retry is how long reads go to the primary after the replica failed
	// one, before the replica is tried again. Zero: 10 s.
	Retry time.Duration
	// Timeout bounds a read on the replica: one that takes longer (a
	// replica that froze) is made again on the primary. Zero: 5 s.
	Timeout time.Duration
}

// replayPoll is how often a read that waits for the replica asks how far
// it has replayed.
const replayPoll = 10 * time.Millisecond

// NewReplicated returns the store that reads through replica (a pool on a
// standby of primary's database, with the same search_path) and writes
// through primary. cfg may be nil. It does not connect: a replica that is
// down now is tried at the first read.
func NewReplicated(primary *Store, replica *pgxpool.Pool, cfg *ReplicaConfig) *Replicated {
	r := &Replicated{Store: primary, pool: replica, cfg: ReplicaConfig{Wait: 2 * time.Second, Retry: 10 * time.Second, Timeout: 5 * time.Second}}
	if cfg != nil && cfg.Wait > 0 {
		r.cfg.Wait = cfg.Wait
	}
	if cfg != nil && cfg.Retry > 0 {
		r.cfg.Retry = cfg.Retry
	}
	if cfg != nil && cfg.Timeout > 0 {
		r.cfg.Timeout = cfg.Timeout
	}
	return r
}

var _ store.Store = (*Replicated)(nil)

// Primary returns the primary's store.
func (r *Replicated) Primary() *Store { return r.Store }

// open returns the replica's store, opening it if need be, or nil while
// the replica is down.
func (r *Replicated) open(ctx context.Context) *Store {
	if rep, ok := r.opened(); ok {
		return rep
	}
	r.opening.Lock()
	defer r.opening.Unlock()
	if rep, ok := r.opened(); ok {
		return rep
	}
	octx, cancel := r.replicaCtx(ctx)
	defer cancel()
	rep, err := New(octx, r.pool, &Config{Now: r.Store.now})
	if err != nil {
		r.down(fmt.Errorf("open the replica: %w", r.replicaErr(ctx, octx, err)))
		return nil
	}
	r.mu.Lock()
	r.replica = rep
	r.mu.Unlock()
	return rep
}

// opened returns the replica's store, or nil while the replica is down,
// and false when it is to be opened.
func (r *Replicated) opened() (*Store, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().Before(r.downTill) {
		return nil, true
	}
	return r.replica, r.replica != nil
}

// down takes the replica out of reads for Retry.
func (r *Replicated) down(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.downTill, r.downErr = time.Now().Add(r.cfg.Retry), err
}

// reader returns the store a read goes to: the replica when it is up and
// has replayed every action made through r, else the primary.
func (r *Replicated) reader(ctx context.Context) *Store {
	rep := r.open(ctx)
	if rep == nil {
		return r.Store
	}
	r.mu.Lock()
	fence, replayed, gaveUp := r.fence, r.replayed, r.gaveUp
	r.mu.Unlock()
	if fence <= replayed {
		return rep
	}
	wait := r.cfg.Wait
	if gaveUp >= fence {
		// A page reads several times: one wait per action, then a look
		// per read until the replica catches up.
		wait = 0
	}
	if ok, _ := r.await(ctx, fence, wait); !ok {
		return r.Store
	}
	return rep
}

// await waits up to wait for the replica to replay the WAL up to pos. It
// reports false when it has not, or when the replica cannot say (it is
// then down).
func (r *Replicated) await(ctx context.Context, pos int64, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	for {
		rctx, cancel := r.replicaCtx(ctx)
		st, err := r.Store.q.ReplayState(rctx, r.pool)
		if err != nil {
			err = r.replicaErr(ctx, rctx, err)
		}
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.down(fmt.Errorf("read the replica's replay position: %w", err))
			}
			return false, err
		}
		replayed := st.Replayed
		if !st.Standby {
			// Not a standby (a primary, or promoted): what it has is
			// current.
			replayed = math.MaxInt64
		}
		r.mu.Lock()
		r.replayed = max(r.replayed, replayed)
		r.mu.Unlock()
		if replayed >= pos {
			return true, nil
		}
		if !time.Now().Before(deadline) {
			r.mu.Lock()
			if wait > 0 {
				r.gaveUp = max(r.gaveUp, pos)
			}
			r.mu.Unlock()
			return false, nil
		}
		t := time.NewTimer(min(replayPoll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
	}
}

// wrote records the primary's WAL position after an action: the reads
// after it wait for the replica to replay that far. A position that cannot
// be read (the primary failing) is not recorded.
func (r *Replicated) wrote(ctx context.Context) (int64, error) {
	pos, err := r.Store.q.WALPositions(ctx, r.Store.pool)
	if err != nil {
		return 0, fmt.Errorf("read the primary's WAL position: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fence = max(r.fence, pos.Inserted)
	return pos.Inserted, nil
}

// ErrReplicaBehind is returned by [Replicated.CatchUp] when the replica has
// not replayed the primary's writes in time.
var ErrReplicaBehind = errors.New("the replica has not replayed the latest writes")

// CatchUp waits, up to [ReplicaConfig.Wait], for the replica to replay
// everything the primary has written so far, so that a later reader of the
// replica (another dagen command) sees it. It returns an error wrapping
// [ErrReplicaBehind] when the replica has not, or the replica's error when
// it cannot say.
func (r *Replicated) CatchUp(ctx context.Context) error {
	pos, err := r.wrote(ctx)
	if err != nil {
		return err
	}
	if r.open(ctx) == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.downErr
	}
	ok, err := r.await(ctx, pos, r.cfg.Wait)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w after %s", ErrReplicaBehind, r.cfg.Wait)
	}
	return nil
}

// Source says where reads go now and how far behind the replica is: the
// line the console and dagen runs show. A replica that is a primary (not
// in recovery) shows nothing.
func (r *Replicated) Source(ctx context.Context) store.ReadSource {
	if r.open(ctx) == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		return store.ReadSource{Fallback: fmt.Sprintf("the replica failed (%v)", r.downErr)}
	}
	// The primary's position first: the replica can only have replayed
	// less than what the primary had flushed when it is asked after. A
	// primary that cannot say leaves what the replica received.
	pos, perr := r.Store.q.WALPositions(ctx, r.Store.pool)
	rctx, cancel := r.replicaCtx(ctx)
	defer cancel()
	st, err := r.Store.q.ReplayState(rctx, r.pool)
	if err != nil {
		err = r.replicaErr(ctx, rctx, err)
		if ctx.Err() == nil {
			r.down(fmt.Errorf("read the replica's replay position: %w", err))
		}
		return store.ReadSource{Fallback: fmt.Sprintf("the replica failed (%v)", err)}
	}
	if !st.Standby {
		return store.ReadSource{}
	}
	src := store.ReadSource{Replica: true}
	head := st.Received
	if perr == nil {
		head = max(head, pos.Flushed)
	}
	if behind := head - st.Replayed; behind > 0 {
		src.Behind, src.Lag = behind, time.Duration(st.SinceXact*float64(time.Second))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replayed = max(r.replayed, st.Replayed)
	if r.fence > r.replayed {
		src.Replica, src.Fallback = false, "the replica has not replayed the latest action yet"
	}
	return src
}

// read runs a read on the replica, or on the primary when the replica is
// down or behind an action. A read the replica fails, or does not answer
// within Timeout, is made again on the primary, which answers for it; a
// run the replica does not know yet may be newer than its replay, so the
// primary is asked too.
func read[T any](r *Replicated, ctx context.Context, fn func(context.Context, *Store) (T, error)) (T, error) {
	st := r.reader(ctx)
	if st == r.Store {
		return fn(ctx, st)
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	v, err := fn(rctx, st)
	if err != nil {
		err = r.replicaErr(ctx, rctx, err)
	}
	cancel()
	if err == nil || ctx.Err() != nil {
		return v, err
	}
	pv, perr := fn(ctx, r.Store)
	if perr == nil && !errors.Is(err, store.ErrRunNotFound) {
		r.down(err)
	}
	return pv, perr
}

// replicaCtx bounds a query on the replica by Timeout.
func (r *Replicated) replicaCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.cfg.Timeout)
}

// replicaErr says what went wrong with a query on the replica made with
// rctx (replicaCtx of ctx): a timeout of its own is said as such.
func (r *Replicated) replicaErr(ctx, rctx context.Context, err error) error {
	if rctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("no answer within %s", r.cfg.Timeout)
	}
	return err
}

// ListRuns implements store.Operator on the replica.
func (r *Replicated) ListRuns(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) (store.RunPage, error) { return s.ListRuns(ctx, f) })
}

// CountRuns implements store.Operator on the replica.
func (r *Replicated) CountRuns(ctx context.Context, f store.RunFilter) (map[store.RunStatus]int, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) (map[store.RunStatus]int, error) { return s.CountRuns(ctx, f) })
}

// GetRun implements store.Execution on the replica.
func (r *Replicated) GetRun(ctx context.Context, id dag.RunID) (store.Run, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) (store.Run, error) { return s.GetRun(ctx, id) })
}

// ReadRun implements store.RunReader on the replica.
func (r *Replicated) ReadRun(ctx context.Context, id dag.RunID) (store.Run, []store.Task, error) {
	type runTasks struct {
		run   store.Run
		tasks []store.Task
	}
	rt, err := read(r, ctx, func(ctx context.Context, s *Store) (runTasks, error) {
		run, tasks, err := s.ReadRun(ctx, id)
		return runTasks{run, tasks}, err
	})
	return rt.run, rt.tasks, err
}

// ListTasks implements store.Execution on the replica.
func (r *Replicated) ListTasks(ctx context.Context, id dag.RunID) ([]store.Task, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) ([]store.Task, error) { return s.ListTasks(ctx, id) })
}

// ListEvents implements store.Execution on the replica.
func (r *Replicated) ListEvents(ctx context.Context, id dag.RunID) ([]store.Event, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) ([]store.Event, error) { return s.ListEvents(ctx, id) })
}

// Unserved implements store.Deploys on the replica.
func (r *Replicated) Unserved(ctx context.Context, id dag.RunID) ([]store.UnservedTask, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) ([]store.UnservedTask, error) { return s.Unserved(ctx, id) })
}

// SignatureInfos implements store.SignatureReader on the replica.
func (r *Replicated) SignatureInfos(ctx context.Context, signatures []string) ([]store.SignatureInfo, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) ([]store.SignatureInfo, error) {
		return s.SignatureInfos(ctx, signatures)
	})
}

// Workers implements store.Fleet on the replica.
func (r *Replicated) Workers(ctx context.Context) ([]store.WorkerInfo, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) ([]store.WorkerInfo, error) { return s.Workers(ctx) })
}

// Backlog implements store.Fleet on the replica.
func (r *Replicated) Backlog(ctx context.Context) ([]store.BacklogEntry, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) ([]store.BacklogEntry, error) { return s.Backlog(ctx) })
}

// QueuePlaces implements store.Fleet on the replica.
func (r *Replicated) QueuePlaces(ctx context.Context, run dag.RunID, steps []string) (map[string]store.QueuePlace, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) (map[string]store.QueuePlace, error) {
		return s.QueuePlaces(ctx, run, steps)
	})
}

// ListSchedules implements store.Scheduler on the replica.
func (r *Replicated) ListSchedules(ctx context.Context, workflow, tenant string) ([]store.Schedule, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) ([]store.Schedule, error) {
		return s.ListSchedules(ctx, workflow, tenant)
	})
}

// CancelRun implements store.Execution on the primary, for the reads after
// it to wait for.
func (r *Replicated) CancelRun(ctx context.Context, id dag.RunID) (bool, error) {
	defer func() { _, _ = r.wrote(ctx) }()
	return r.Store.CancelRun(ctx, id)
}

// CancelRuns implements store.Operator on the primary, for the reads after
// it to wait for.
func (r *Replicated) CancelRuns(ctx context.Context, f store.RunFilter, limit int) (int, error) {
	defer func() { _, _ = r.wrote(ctx) }()
	return r.Store.CancelRuns(ctx, f, limit)
}

// RetryRun implements store.Retrier on the primary, for the reads after it
// to wait for.
func (r *Replicated) RetryRun(ctx context.Context, id dag.RunID, rt store.Retry) (store.RetryResult, error) {
	defer func() { _, _ = r.wrote(ctx) }()
	return r.Store.RetryRun(ctx, id, rt)
}

// SendSignal implements store.Signaler on the primary, for the reads after
// it to wait for.
func (r *Replicated) SendSignal(ctx context.Context, id dag.RunID, step string, payload []byte) (bool, error) {
	defer func() { _, _ = r.wrote(ctx) }()
	return r.Store.SendSignal(ctx, id, step, payload)
}

// PutSchedule implements store.Scheduler on the primary, for the reads
// after it to wait for.
func (r *Replicated) PutSchedule(ctx context.Context, s store.Schedule) error {
	defer func() { _, _ = r.wrote(ctx) }()
	return r.Store.PutSchedule(ctx, s)
}

// PauseSchedule implements store.Scheduler on the primary, for the reads
// after it to wait for.
func (r *Replicated) PauseSchedule(ctx context.Context, ref store.ScheduleRef, paused bool, next time.Time) error {
	defer func() { _, _ = r.wrote(ctx) }()
	return r.Store.PauseSchedule(ctx, ref, paused, next)
}

// DeleteSchedule implements store.Scheduler on the primary, for the reads
// after it to wait for.
func (r *Replicated) DeleteSchedule(ctx context.Context, ref store.ScheduleRef) error {
	defer func() { _, _ = r.wrote(ctx) }()
	return r.Store.DeleteSchedule(ctx, ref)
}

// ListChildren implements store.Operator on the replica.
func (r *Replicated) ListChildren(ctx context.Context, id dag.RunID) ([]store.ChildRun, error) {
	return read(r, ctx, func(ctx context.Context, s *Store) ([]store.ChildRun, error) { return s.ListChildren(ctx, id) })
}
