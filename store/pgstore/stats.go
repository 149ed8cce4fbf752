package pgstore

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// growthCheckEvery is how many tasks a store creates or enqueues between
// two looks at the size of the hot tables (one cheap query).
const growthCheckEvery = 1000

// plannerStats keeps the planner's view of the hot tables in step with
// their growth.
//
// pgx prepares every statement, and after five executions Postgres may
// settle on a generic plan made from the statistics and table sizes of that
// moment. A queue's tables start empty: plans made then scan whole tables,
// which is right for ten rows and ruinous for a hundred thousand (a claim
// joined to the tasks table that way went from under a millisecond to over
// a hundred; a claim planned while the ready queue held the 200 roots of a
// fan-out scanned all 10,000 of their children at each claim, 33 ms).
// Autovacuum analyzes the tables eventually, at its own pace (a minute at
// best, never where it is off). So every thousand tasks it creates or
// enqueues, the store looks at the sizes of the tasks table and of the
// ready queue on disk and, when either has at least doubled since the store
// last analyzed them, analyzes the hot tables itself (only the queue's when
// only the queue grew). ANALYZE also invalidates the cached plans, so every
// connection plans them again from the new statistics.
//
// It is best effort: a failed check costs nothing but the refresh, and a
// role that may not analyze the tables turns it off.
type plannerStats struct {
	mu       sync.Mutex
	added    int   // tasks created or enqueued since the last look
	tasks    int64 // the tasks table's pages when this store last analyzed it
	ready    int64 // the ready queue's pages then
	checking bool  // a look is under way
	off      bool  // not permitted: stop trying
}

// noteQueued records that n tasks were created or enqueued and, when
// enough were, refreshes the statistics before it returns.
func (s *Store) noteQueued(ctx context.Context, n int) {
	ps := &s.stats
	ps.mu.Lock()
	ps.added += n
	due := !ps.off && !ps.checking && ps.added >= growthCheckEvery
	if due {
		ps.checking = true
		ps.added = 0
	}
	tasks, ready := ps.tasks, ps.ready
	ps.mu.Unlock()
	if !due {
		return
	}
	tasks, ready, analyzed, err := s.refreshStats(ctx, tasks, ready)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.checking = false
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42501": // insufficient_privilege
		ps.off = true
	case err == nil && analyzed:
		ps.tasks, ps.ready = tasks, ready
	}
}

// refreshStats analyzes the hot tables when the tasks table has at least
// doubled since it had lastTasks pages, or the queue's tables when only the
// ready queue has since it had lastReady, and returns the sizes the tables
// were analyzed at.
func (s *Store) refreshStats(ctx context.Context, lastTasks, lastReady int64) (tasks, ready int64, analyzed bool, err error) {
	pages, err := s.q.HotTablePages(ctx, s.pool)
	if err != nil {
		return 0, 0, false, err
	}
	switch {
	case pages.Tasks >= 2*lastTasks+8:
		err = s.q.AnalyzeHotTables(ctx, s.pool)
	case pages.Ready >= 2*lastReady+8:
		// Only the queue grew: analyzing the tasks table too would cost
		// ten times as much (160 ms in fan50) for nothing.
		err = s.q.AnalyzeQueueTables(ctx, s.pool)
		pages.Tasks = lastTasks
	default:
		return lastTasks, lastReady, false, nil
	}
	if err != nil {
		return lastTasks, lastReady, false, err
	}
	return pages.Tasks, pages.Ready, true, nil
}
