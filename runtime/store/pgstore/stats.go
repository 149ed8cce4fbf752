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
// enqueues, the store looks at the sizes of the tasks table, of the ready
// queue and of the tenants' table on disk and, when one has at least
// doubled since the store last analyzed it, analyzes the hot tables itself
// (only the queue's, or only the tenants', when only those grew). ANALYZE
// also invalidates the cached plans, so every connection plans them again
// from the new statistics. (A plan made while the tenants' table held a few
// rows reads it whole, which costs little until it has grown: EnsureTenants
// and Enqueue, kept as one plan each, found tenants that way.)
//
// It is best effort: a failed check costs nothing but the refresh, and a
// role that may not analyze the tables turns it off.
type plannerStats struct {
	mu       sync.Mutex
	added    int   // tasks created or enqueued since the last look
	tasks    int64 // the tasks table's pages when this store last analyzed it
	ready    int64 // the ready queue's pages then
	tenants  int64 // the tenants' table's pages then
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
	last := tablePages{tasks: ps.tasks, ready: ps.ready, tenants: ps.tenants}
	ps.mu.Unlock()
	if !due {
		return
	}
	now, analyzed, err := s.refreshStats(ctx, last)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.checking = false
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42501": // insufficient_privilege
		ps.off = true
	case err == nil && analyzed:
		ps.tasks, ps.ready, ps.tenants = now.tasks, now.ready, now.tenants
	}
}

// tablePages are the sizes of the tables whose growth refreshes the
// statistics.
type tablePages struct{ tasks, ready, tenants int64 }

// refreshStats analyzes the hot tables when the tasks table has at least
// doubled since it had last.tasks pages, the queue's tables when only the
// ready queue has, and the tenants' table when it has (alone, or with the
// hot tables). It returns the sizes the tables were analyzed at.
func (s *Store) refreshStats(ctx context.Context, last tablePages) (tablePages, bool, error) {
	p, err := s.q.HotTablePages(ctx, s.pool)
	if err != nil {
		return last, false, err
	}
	now := tablePages{tasks: p.Tasks, ready: p.Ready, tenants: p.Tenants}
	grew := func(now, last, slack int64) bool { return now >= 2*last+slack }
	hot := grew(now.tasks, last.tasks, 8) // ANALYZE of the hot tables covers the other two
	// Otherwise only what grew is analyzed: the tasks table would cost ten
	// times as much as the queue's (160 ms in fan50), for nothing. The
	// tenants' table is small, so its slack is too: a few pages more
	// already make a plan that reads it whole cost more than lookups.
	queue := !hot && grew(now.ready, last.ready, 8)
	tenants := !hot && grew(now.tenants, last.tenants, 2)
	if !hot && !queue && !tenants {
		return last, false, nil
	}
	if !hot { // what is not analyzed keeps the size it was analyzed at
		now.tasks = last.tasks
		if !queue {
			now.ready = last.ready
		}
		if !tenants {
			now.tenants = last.tenants
		}
	}
	if hot {
		err = s.q.AnalyzeHotTables(ctx, s.pool)
	}
	if tenants && err == nil {
		err = s.q.AnalyzeTenantTable(ctx, s.pool)
	}
	if queue && err == nil {
		err = s.q.AnalyzeQueueTables(ctx, s.pool)
	}
	if err != nil {
		return last, false, err
	}
	return now, true, nil
}
