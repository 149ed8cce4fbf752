package maintenance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// growthCheckEvery is how many tasks a store creates or enqueues between
// two looks at the size of the hot tables (one cheap query).
const growthCheckEvery = 1000

// Stats keeps the planner's view of the hot tables in step with their
// growth.
//
// pgx prepares every statement, and after five executions Postgres may
// settle on a generic plan made from the statistics and table sizes of that
// moment. A queue's tables start empty: plans made then scan whole tables,
// which is right for ten rows and ruinous for a hundred thousand (a claim
// joined to the tasks table that way read it whole at every claim; a claim
// planned while the ready queue held a fan-out's roots scanned all of
// their children at each claim; see docs/performance.md, "Statistics kept
// in step with the tables' growth").
// Autovacuum analyzes the tables eventually, at its own pace (a minute at
// best, never where it is off). So every thousand tasks it creates or
// enqueues, the store looks at the sizes of the tasks table, of the ready
// queue and of the tenants' table on disk and, when one has at least
// doubled since the store last analyzed it, analyzes the hot tables itself
// (only the queue's, or only the tenants', when only those grew), and the
// ranges of the history tables that have doubled since their last ANALYZE
// (see rangeStatsPages), in the background. ANALYZE
// also invalidates the cached plans, so every connection plans them again
// from the new statistics. (A plan made while the tenants' table held a few
// rows reads it whole, which costs little until it has grown: EnsureTenants
// and Enqueue, kept as one plan each, found tenants that way.)
//
// It is best effort: a failed check costs nothing but the refresh, and a
// role that may not analyze the tables turns it off.
type Stats struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
	now  func() time.Time // the store's clock, nil for this process's: see idClock

	job countedJob // every growthCheckEvery tasks created or enqueued

	// The sizes the tables were last analyzed at, in pages: read and
	// written only by the job's run, one at a time.
	tasks   int64 // the tasks table's
	ready   int64 // the ready queue's
	tenants int64 // the tenants' table's
}

// NewStats returns the statistics keeper of pool's schema. now is the
// store's clock (Config.Now), nil for this process's: the ranges new runs
// go to are those of its time.
func NewStats(pool *pgxpool.Pool, now func() time.Time) *Stats {
	s := &Stats{pool: pool, q: dbsqlc.New(), now: now}
	s.job.every = growthCheckEvery
	return s
}

// Note records that n tasks were created or enqueued and, when enough
// were, refreshes the statistics in the background: an ANALYZE of the
// history tables takes long on a large schema, which the caller's batch
// should not wait for (see docs/performance.md, "Statistics kept in step
// with the tables' growth"). Tasks noted during a refresh make it look
// again when it is done.
func (s *Stats) Note(ctx context.Context, n int) {
	s.job.note(ctx, n, s.refreshOnce)
}

// Wait waits for the refresh under way in the background, if any.
func (s *Stats) Wait() { s.job.wait() }

// refreshOnce refreshes the statistics once and, when it analyzed tables,
// remembers the sizes it analyzed them at.
func (s *Stats) refreshOnce(ctx context.Context) error {
	now, analyzed, err := s.refreshWithin(ctx, tablePages{tasks: s.tasks, ready: s.ready, tenants: s.tenants})
	if err == nil && analyzed {
		s.tasks, s.ready, s.tenants = now.tasks, now.ready, now.tenants
	}
	return err
}

// isInsufficientPrivilege reports whether err is Postgres's
// insufficient_privilege.
func isInsufficientPrivilege(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// refreshWithin is refresh and analyzeRanges within refreshTimeout.
func (s *Stats) refreshWithin(ctx context.Context, last tablePages) (tablePages, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	now, analyzed, err := s.refresh(ctx, last)
	if err == nil {
		err = s.analyzeRanges(ctx)
	}
	return now, analyzed, err
}

// refreshTimeout bounds one refresh of the statistics.
const refreshTimeout = time.Minute

// tablePages are the sizes of the tables whose growth refreshes the
// statistics.
type tablePages struct{ tasks, ready, tenants int64 }

// refresh analyzes the hot tables when the tasks table has at least
// doubled since it had last.tasks pages, the queue's tables when only the
// ready queue has, and the tenants' table when it has (alone, or with the
// hot tables). It returns the sizes the tables were analyzed at.
func (s *Stats) refresh(ctx context.Context, last tablePages) (tablePages, bool, error) {
	p, err := s.q.HotTablePages(ctx, s.pool)
	if err != nil {
		return last, false, err
	}
	now := tablePages{tasks: p.Tasks, ready: p.Ready, tenants: p.Tenants}
	grew := func(now, last, slack int64) bool { return now >= 2*last+slack }
	hot := grew(now.tasks, last.tasks, 8) // ANALYZE of the hot tables covers the other two
	// Otherwise only what grew is analyzed: the tasks table costs far
	// more than the queue's, for nothing (see docs/performance.md,
	// "Statistics kept in step with the tables' growth"). The
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
	err = s.analyzeSampled(ctx, func(tx pgx.Tx) error {
		if hot {
			return s.q.AnalyzeHotTables(ctx, tx)
		}
		var err error
		if tenants {
			err = s.q.AnalyzeTenantTable(ctx, tx)
		}
		if queue && err == nil {
			err = s.q.AnalyzeQueueTables(ctx, tx)
		}
		return err
	})
	if err != nil {
		return last, false, err
	}
	return now, true, nil
}

// rangeStatsPages is the size, in pages, from which a range of the history
// tables must not look to the planner half its size or less.
//
// A range's statistics are those of its last ANALYZE, and an ANALYZE of a
// history table reaches every range, including those made ahead, still
// empty. A generic plan made from them takes such a range for empty, or
// tiny, for good, and reads it whole in place of a lookup: an index lookup
// by key, or the TID scan of UpdateTasks and DecrementChildren, whose
// estimate (four pages a row) loses to reading a table of 25 pages. Once
// the range was the one new runs go to, a claim read the range for each of
// its tasks, and an update read the whole range for each batch, and the
// work fell behind for good (see docs/performance.md, "Ranges analyzed as
// they fill").
// A range never analyzed is no safer: Postgres assumes ten pages of it,
// and ten pages still lose to the TID scan. So a range new runs go to is
// analyzed once it holds this much, and again each time it has doubled
// since: a plan made between two ANALYZEs reads at most twice what the
// planner thought a whole read cheaper than lookups at. Past
// rangeStatsMaxPages no plan reads a range whole, and more ANALYZEs would
// cost more than they settle: each reads as many pages as all those
// before it together, up to 30,000, and a range grows well past that (see
// docs/performance.md, "Ranges analyzed as they fill").
const (
	rangeStatsPages    = 16
	rangeStatsMaxPages = 8192
)

// analyzeRanges analyzes the ranges new runs go to that hold
// rangeStatsPages pages or more while their statistics say no rows, or
// half their pages or fewer (below rangeStatsMaxPages), which makes every
// session plan again the statements it had planned from the old ones. It
// skips a range another session analyzes.
func (s *Stats) analyzeRanges(ctx context.Context) error {
	since := pgtype.UUID{Bytes: uuidAt(idClock(s.now).Add(-partitionGrace)), Valid: true}
	names, err := s.q.UnderstatedRanges(ctx, s.pool, dbsqlc.UnderstatedRangesParams{SinceID: since, MinPages: rangeStatsPages, MaxPages: rangeStatsMaxPages})
	if err != nil || len(names) == 0 {
		return err
	}
	// ANALYZE takes no parameters: the simple protocol, names quoted by
	// Postgres (regclass).
	err = s.analyzeSampled(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "ANALYZE (SKIP_LOCKED) "+strings.Join(names, ", "))
		return err
	})
	if err != nil {
		return fmt.Errorf("analyze %d ranges: %w", len(names), err)
	}
	return nil
}

// analyzeSampled runs analyze, the store's ANALYZEs, in a transaction
// whose statistics target is statsTarget.
func (s *Stats) analyzeSampled(ctx context.Context, analyze func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL default_statistics_target = %d", statsTarget)); err != nil {
			return err
		}
		return analyze(tx)
	})
}

// statsTarget is the statistics target of the store's own ANALYZEs: a
// sample of 300 times as many rows. What the plans of the engine's
// statements need from the statistics is the tables' sizes, and key
// lookups' and statuses' estimates, which a sample of 3,000 rows gives as
// well as Postgres's default of 30,000. At the default, the ANALYZEs of a
// range growing to rangeStatsMaxPages, and those of the hot tables and of
// the queue's as a fan-out's children filled the queue, cost CPU that the
// smaller sample saves (see docs/performance.md, "A small statistics
// sample").
const statsTarget = 10
