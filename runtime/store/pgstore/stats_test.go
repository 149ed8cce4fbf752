package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestStatisticsFollowGrowth checks that the store analyzes its tables as
// they grow from empty, without waiting for autovacuum: the planner's row
// count of the tasks table (-1 until the first ANALYZE) keeps up with it.
func TestStatisticsFollowGrowth(t *testing.T) {
	s := freshStore(t, nil, 1)
	reltuples := func() float64 { return reltuplesOf(t, s, "dagen_tasks") }
	require.Less(t, reltuples(), 1.0, "a new schema's tasks table has no statistics yet")

	var runs []store.NewRun
	for i := range 8000 {
		runs = append(runs, newRun("w", fmt.Sprint("t", i%4), step("a"), step("b", "a")))
	}
	createInBatches(t, s, runs[:1000])
	require.Eventually(t, func() bool { return reltuples() >= 1000 }, 10*time.Second, 10*time.Millisecond,
		"2,000 tasks created: the table was analyzed")
	after2k := reltuples()
	createInBatches(t, s, runs[1000:])
	require.Eventually(t, func() bool { return reltuples() >= 4*after2k }, 10*time.Second, 10*time.Millisecond,
		"16,000 tasks created: analyzed again as the table grew")
}

// TestStatisticsFollowQueueGrowth checks that the ready queue's statistics
// follow its growth when the tasks table does not grow: a fan-out's runs
// are all created up front, analyzed with their roots alone in the queue,
// and the queue fills only as the roots complete.
func TestStatisticsFollowQueueGrowth(t *testing.T) {
	ctx := context.Background()
	s := freshStore(t, nil, 1)
	reltuples := func() float64 { return reltuplesOf(t, s, "dagen_ready") }
	var runs []store.NewRun
	for range 100 {
		tasks := []store.NewTask{step("root")}
		for i := range 50 {
			tasks = append(tasks, step(fmt.Sprint("c", i), "root"))
		}
		runs = append(runs, newRun("fan", "t", tasks...))
	}
	require.NoError(t, s.CreateRuns(ctx, runs))
	require.Less(t, reltuples(), 1000.0, "analyzed with the roots alone in the queue")

	claimAndComplete(t, s, 100)
	require.Eventually(t, func() bool { return reltuples() >= 4000 }, 10*time.Second, 10*time.Millisecond,
		"5,000 children enqueued: the queue was analyzed again")
	require.LessOrEqual(t, histogramBounds(t, s.Pool(), "dagen_ready", "id"), 11,
		"analyzed from a small sample: a histogram of 10 buckets, not the default's 100")
}

// histogramBounds is how many bounds the histogram of table's column has:
// one more than its buckets, at most the statistics target of the last
// ANALYZE.
func histogramBounds(t *testing.T, pool *pgxpool.Pool, table, column string) int {
	t.Helper()
	var bounds int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT coalesce(array_length(histogram_bounds::text::text[], 1), 0) FROM pg_stats
		WHERE schemaname = current_schema() AND tablename = $1 AND attname = $2`, table, column).Scan(&bounds))
	require.Positive(t, bounds, "%s.%s has a histogram", table, column)
	return bounds
}

// TestStatisticsFollowTenantGrowth checks that the tenants' table is
// analyzed as it grows while the tasks table and the queue barely do: a
// plan for EnsureTenants or Enqueue made while it held a few tenants reads
// it whole, and only fresh statistics replace that plan.
func TestStatisticsFollowTenantGrowth(t *testing.T) {
	s := freshStore(t, nil, 1)
	reltuples := func() float64 { return reltuplesOf(t, s, "dagen_tenant_groups") }
	var runs []store.NewRun
	for range 20000 {
		runs = append(runs, newRun("w", "big", step("a")))
	}
	createInBatches(t, s, runs)
	require.Less(t, reltuples(), 2.0, "analyzed with one tenant")

	runs = runs[:0]
	for i := range 3000 {
		runs = append(runs, newRun("w", fmt.Sprint("small-", i), step("a")))
	}
	createInBatches(t, s, runs)
	require.Eventually(t, func() bool { return reltuples() >= 1000 }, 10*time.Second, 10*time.Millisecond,
		"3,000 tenants more: analyzed again")
}

// reltuplesOf is the planner's row count of a table: -1 before it was
// first analyzed.
func reltuplesOf(t *testing.T, s *pgstore.Store, table string) float64 {
	t.Helper()
	var n float64
	require.NoError(t, s.Pool().QueryRow(context.Background(), `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, table).Scan(&n))
	return n
}

// rangeStatsFixture is a store on a traced pool whose clock starts an hour
// ahead (past migration 009's range), with ranges of a minute made ahead,
// and 4,000 two-step runs in the present range, created in two steps
// that the store analyzed each (the last ANALYZE saw the tables as they
// are): the tables as a whole do not double from a few thousand tasks
// more, so no ANALYZE of them is due.
type rangeStatsFixture struct {
	s      *pgstore.Store
	pool   *pgxpool.Pool
	log    *statementLog
	clock  *fakeClock
	t0     time.Time
	runsAt func(at time.Time, n int) []store.NewRun // n runs with ids made at at
}

func newRangeStatsFixture(t *testing.T) *rangeStatsFixture {
	t.Helper()
	ctx := context.Background()
	f := &rangeStatsFixture{t0: time.Now().Add(time.Hour).Truncate(time.Minute)}
	f.clock = &fakeClock{now: f.t0}
	f.pool, f.log = tracedPool(t)
	var err error
	f.s, err = pgstore.New(ctx, f.pool, &pgstore.Config{Now: f.clock.Now, PartitionPeriod: time.Minute})
	require.NoError(t, err)
	_, err = f.s.PruneRuns(ctx, f.t0.Add(-time.Hour), 0) // the ranges ahead
	require.NoError(t, err)
	f.runsAt = func(at time.Time, n int) []store.NewRun {
		var runs []store.NewRun
		for range n {
			r := newRun("w", "acme", step("a"), step("b", "a"))
			r.ID = runIDAt(at)
			runs = append(runs, r)
		}
		return runs
	}
	tasksAnalyzed := func(n float64) func() bool {
		return func() bool { return reltuplesOf(t, f.s, "dagen_tasks") >= n }
	}
	require.NoError(t, f.s.CreateRuns(ctx, f.runsAt(f.t0, 1000)))
	require.Eventually(t, tasksAnalyzed(2000), 10*time.Second, 10*time.Millisecond, "2,000 tasks: analyzed")
	require.NoError(t, f.s.CreateRuns(ctx, f.runsAt(f.t0, 3000)))
	require.Eventually(t, tasksAnalyzed(8000), 10*time.Second, 10*time.Millisecond, "8,000 tasks: analyzed again")
	return f
}

// TestRangeAnalyzedEmptyIsAnalyzedAgain checks the statistics of a range
// made ahead. An ANALYZE of the history tables reaches the ranges made
// ahead while they are empty, and a generic plan cached from those
// statistics reads such a range whole for each lookup once runs go to it
// (see docs/performance.md, "Ranges analyzed as they fill"). When the
// range has filled while the tables as a whole have not doubled (no
// ANALYZE of them is due), the store analyzes the range alone, which makes
// the sessions plan again.
func TestRangeAnalyzedEmptyIsAnalyzedAgain(t *testing.T) {
	ctx := context.Background()
	f := newRangeStatsFixture(t)
	s, pool, log, clock, t0, runsAt := f.s, f.pool, f.log, f.clock, f.t0, f.runsAt
	// The last ANALYZE saw the next range empty.
	var suffix string // of the range after the present one
	require.NoError(t, pool.QueryRow(ctx, `SELECT suffix FROM dagen_partitions WHERE from_id > $1 ORDER BY from_id LIMIT 1`,
		runIDAt(t0).String()).Scan(&suffix))
	require.Zero(t, reltuplesOf(t, s, "dagen_tasks_"+suffix), "the range ahead was analyzed empty")

	// A session caches the claim's generic plan while the range is empty.
	_, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	cachedPlan := genericPlan(t, pool, log, "ClaimTasks")
	cachedScans := func() []string { return scannedTables(cachedPlan()) }
	require.Contains(t, cachedScans(), "dagen_tasks_"+suffix, "a plan made while the range was empty reads it whole")

	clock.Advance(time.Minute)
	require.NoError(t, s.CreateRuns(ctx, runsAt(clock.Now(), 1200))) // 2,400 tasks more: the tables did not double
	require.Eventually(t, func() bool { return reltuplesOf(t, s, "dagen_tasks_"+suffix) >= 2000 },
		10*time.Second, 10*time.Millisecond, "the range that filled was analyzed")
	scans := cachedScans()
	require.NotContains(t, scans, "dagen_tasks_"+suffix, "the session planned the claim again: it finds the range's tasks by key")
	require.NotContains(t, scans, "dagen_runs_"+suffix, "the session planned the claim again: it finds the range's runs by key")
}

// genericPlan prepares the last logged statement called name on a
// connection of its own that keeps generic plans, and returns a function
// that returns its cached plan (for the statement's logged arguments): the
// plan a session keeps until something makes it plan again.
func genericPlan(t *testing.T, pool *pgxpool.Pool, log *statementLog, name string) func() map[string]any {
	t.Helper()
	conn, err := pool.Acquire(context.Background())
	require.NoError(t, err)
	t.Cleanup(conn.Release)
	return genericPlanOn(t, conn, log, name)
}

// genericPlanOn is genericPlan on conn, which it leaves keeping generic
// plans.
func genericPlanOn(t *testing.T, conn *pgxpool.Conn, log *statementLog, name string) func() map[string]any {
	t.Helper()
	ctx := context.Background()
	st := log.last(name)
	require.NotEmpty(t, st.sql, "no %s was logged", name)
	_, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan")
	require.NoError(t, err)
	stmt := strings.ToLower(name) // as EXECUTE names it
	_, err = conn.Conn().Prepare(ctx, stmt, st.sql)
	require.NoError(t, err)
	params := make([]string, len(st.args))
	for i := range params {
		params[i] = fmt.Sprint("$", i+1)
	}
	return func() map[string]any {
		var plan []map[string]any
		// EXECUTE takes values, not parameters: pgx writes them in. An
		// UPDATE is explained, not run.
		args := append([]any{pgx.QueryExecModeSimpleProtocol}, st.args...)
		require.NoError(t, conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE "+stmt+"("+strings.Join(params, ", ")+")", args...).Scan(&plan))
		return plan[0]["Plan"].(map[string]any)
	}
}

// scansOf returns the node types of a plan's scans of table.
func scansOf(node map[string]any, table string) []string {
	var out []string
	walkPlan(node, func(n map[string]any) {
		if n["Relation Name"] == table {
			out = append(out, fmt.Sprint(n["Node Type"]))
		}
	})
	return out
}

// TestRangeAnalyzedAgainAsItGrows checks the statistics of the range new
// runs go to as it fills. A generic plan made while a range held a few
// pages, or none (analyzed empty or never analyzed: Postgres then assumes
// ten pages), reads the range whole where it should look rows up: the TID
// scan of UpdateTasks, costed at four pages a row, loses to reading ten
// pages. Once the range had filled, that plan read all of it at every
// completion, and throughput fell and never recovered (see
// docs/performance.md, "Ranges analyzed as they fill"). So the store
// analyzes the range once it holds a few pages, and again each time it has
// doubled since, which makes the sessions plan again.
func TestRangeAnalyzedAgainAsItGrows(t *testing.T) {
	ctx := context.Background()
	f := newRangeStatsFixture(t)
	s, pool, log, clock, t0, runsAt := f.s, f.pool, f.log, f.clock, f.t0, f.runsAt

	// A range made after the last ANALYZE was never analyzed.
	clock.Advance(time.Minute)
	_, err := s.PruneRuns(ctx, t0.Add(-time.Hour), 0)
	require.NoError(t, err)
	var suffix string // of the newest range
	require.NoError(t, pool.QueryRow(ctx, `SELECT suffix FROM dagen_partitions ORDER BY from_id DESC LIMIT 1`).Scan(&suffix))
	rng := "dagen_tasks_" + suffix
	require.Less(t, reltuplesOf(t, s, rng), 0.0, "the newest range was never analyzed")

	// A session caches UpdateTasks's generic plan meanwhile.
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.NotEmpty(t, claimed)
	results := make([]store.TaskResult, len(claimed))
	for i, c := range claimed {
		results[i] = completed(c)
	}
	_, err = s.CompleteTasks(ctx, results)
	require.NoError(t, err)
	cachedPlan := genericPlan(t, pool, log, "UpdateTasks")
	require.Contains(t, scansOf(cachedPlan(), rng), "Seq Scan", "a plan made while the range was never analyzed reads it whole")

	// Runs go to the range: once it holds a few pages, it is analyzed,
	// and the session plans again.
	var from time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_timestamp(('x' || left(replace(from_id::text, '-', ''), 12))::bit(48)::bigint / 1000.0)
		FROM dagen_partitions WHERE suffix = $1`, suffix).Scan(&from))
	clock.Advance(from.Sub(clock.Now()))
	createInBatches(t, s, runsAt(from, 600))
	require.Eventually(t, func() bool { return reltuplesOf(t, s, rng) >= 1000 }, 10*time.Second, 10*time.Millisecond,
		"1,200 tasks in the range: analyzed")
	scans := scansOf(cachedPlan(), rng)
	require.NotContains(t, scans, "Seq Scan", "the session planned UpdateTasks again")
	require.Contains(t, scans, "Tid Scan", "the session planned UpdateTasks again: it takes the range's rows by ctid")
	var pages int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT relpages FROM pg_class WHERE oid = $1::regclass`, rng).Scan(&pages))

	// Doubled since: analyzed again.
	createInBatches(t, s, runsAt(from, 1800))
	require.Eventually(t, func() bool {
		var now int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT relpages FROM pg_class WHERE oid = $1::regclass`, rng).Scan(&now))
		return now >= 2*pages
	}, 10*time.Second, 10*time.Millisecond, "the range doubled since its last ANALYZE (%d pages): analyzed again", pages)

	// From a small sample: a histogram of 10 buckets, not the default's 100.
	require.LessOrEqual(t, histogramBounds(t, pool, rng, "run_id"), 11, "analyzed with a statistics target of 10")
}

// TestQueueVacuumedByChurn checks that the ready queue and the leases,
// which every step writes twice, are vacuumed as tasks go through them,
// without a leader's round or autovacuum: 20,000 tasks enqueued and
// claimed leave their dead rows to a vacuum of the store's own.
func TestQueueVacuumedByChurn(t *testing.T) {
	ctx := context.Background()
	s := freshStore(t, nil, 1)
	vacuums := func(table string) (n int64) {
		require.NoError(t, s.Pool().QueryRow(ctx,
			`SELECT vacuum_count + autovacuum_count FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = $1`,
			table).Scan(&n))
		return n
	}
	claimAll := func(n int) {
		for n > 0 {
			claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1000, Lease: time.Minute})
			require.NoError(t, err)
			require.NotEmpty(t, claimed)
			n -= len(claimed)
		}
	}
	var runs []store.NewRun
	for range 22000 {
		runs = append(runs, newRun("w", "t", step("a")))
	}
	createInBatches(t, s, runs[:10000])
	claimAll(10000)
	require.Zero(t, vacuums("dagen_ready"), "10,000 tasks: not vacuumed yet")

	createInBatches(t, s, runs[10000:])
	claimAll(12000)
	require.Eventually(t, func() bool { return vacuums("dagen_ready") > 0 && vacuums("dagen_leases") > 0 },
		10*time.Second, 10*time.Millisecond, "22,000 tasks went through the queue: it was vacuumed")
}
