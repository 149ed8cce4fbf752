package pgstore

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// growthCheckEvery is how many tasks a store creates between two looks at
// the size of the tasks table (one cheap query).
const growthCheckEvery = 1000

// plannerStats keeps the planner's view of the hot tables in step with
// their growth.
//
// pgx prepares every statement, and after five executions Postgres may
// settle on a generic plan made from the statistics and table sizes of that
// moment. A queue's tables start empty: plans made then scan whole tables,
// which is right for ten rows and ruinous for a hundred thousand (a claim
// joined to the tasks table that way went from under a millisecond to over
// a hundred). Autovacuum analyzes the tables eventually, at its own pace
// (a minute at best). So every thousand tasks it creates, the store looks
// at the size of the tasks table on disk and, when it has at least doubled
// since the store last analyzed it, analyzes the hot tables itself. ANALYZE also invalidates the cached
// plans, so every connection plans them again from the new statistics.
//
// It is best effort: a failed check costs nothing but the refresh, and a
// role that may not analyze the tables turns it off.
type plannerStats struct {
	mu       sync.Mutex
	added    int   // tasks created since the last look
	pages    int64 // the tasks table's pages when this store last analyzed it
	checking bool  // a look is under way
	off      bool  // not permitted: stop trying
}

// noteCreated records that n tasks were created and, when enough were,
// refreshes the statistics before it returns.
func (s *Store) noteCreated(ctx context.Context, n int) {
	ps := &s.stats
	ps.mu.Lock()
	ps.added += n
	due := !ps.off && !ps.checking && ps.added >= growthCheckEvery
	if due {
		ps.checking = true
		ps.added = 0
	}
	last := ps.pages
	ps.mu.Unlock()
	if !due {
		return
	}
	pages, analyzed, err := s.refreshStats(ctx, last)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.checking = false
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42501": // insufficient_privilege
		ps.off = true
	case err == nil && analyzed:
		ps.pages = pages
	}
}

// refreshStats analyzes the hot tables when the tasks table has at least
// doubled since it had last pages.
func (s *Store) refreshStats(ctx context.Context, last int64) (pages int64, analyzed bool, err error) {
	pages, err = s.q.TasksTablePages(ctx, s.pool)
	if err != nil || pages < 2*last+8 {
		return pages, false, err
	}
	if err := s.q.AnalyzeHotTables(ctx, s.pool); err != nil {
		return pages, false, err
	}
	return pages, true, nil
}
