package pgstore_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// statementLog records the named statements a pool runs, with their
// arguments, whether sent alone or in a batch.
type statementLog struct {
	mu    sync.Mutex
	stmts []loggedStatement
	sends int // round trips: queries sent alone and batches
}

type loggedStatement struct {
	sql  string
	args []any
	conn *pgx.Conn // that ran it
}

func (l *statementLog) add(conn *pgx.Conn, sql string, args []any) {
	if !strings.HasPrefix(sql, "-- name: ") {
		return
	}
	l.mu.Lock()
	l.stmts = append(l.stmts, loggedStatement{sql, args, conn})
	l.mu.Unlock()
}

func (l *statementLog) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(conn, d.SQL, d.Args)
	l.mu.Lock()
	l.sends++
	l.mu.Unlock()
	return ctx
}
func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	l.mu.Lock()
	l.sends++
	l.mu.Unlock()
	return ctx
}
func (l *statementLog) TraceBatchQuery(_ context.Context, conn *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.add(conn, d.SQL, d.Args)
}
func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// last returns the last logged statement called name, or a zero one.
func (l *statementLog) last(name string) loggedStatement {
	l.mu.Lock()
	defer l.mu.Unlock()
	var st loggedStatement
	for _, x := range l.stmts {
		if strings.HasPrefix(x.sql, "-- name: "+name+" ") {
			st = x
		}
	}
	return st
}

// count returns how many logged statements are called name.
func (l *statementLog) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.stmts {
		if strings.HasPrefix(x.sql, "-- name: "+name+" ") {
			n++
		}
	}
	return n
}

// tracedPool opens a pool on a new migrated schema whose statements are
// logged.
func tracedPool(t *testing.T) (*pgxpool.Pool, *statementLog) {
	t.Helper()
	return tracedPoolOf(t, 0)
}

// tracedPoolOf is tracedPool with at most maxConns connections (0: pgx's
// default).
func tracedPoolOf(t *testing.T, maxConns int32) (*pgxpool.Pool, *statementLog) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	require.NoError(t, err)
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgtest.Schema(t)
	log := &statementLog{}
	cfg.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	return pool, log
}

// TestLargeBatchesAreNotJITCompiled plans every statement of a large
// batch — 200 fan-out runs created at once, claimed and completed 1,024 at
// a time, so one completion enqueues 10,000 children — and checks that
// none is costed high enough for Postgres to JIT-compile it: a bad row
// estimate once made one enqueue pay for a long compilation (see
// docs/performance.md, "No JIT compilation of large batches").
func TestLargeBatchesAreNotJITCompiled(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)

	var runs []store.NewRun
	for range 200 {
		tasks := []store.NewTask{step("root")}
		var mid []string
		for i := range 50 {
			name := "m" + string(rune('A'+i/26)) + string(rune('a'+i%26))
			mid = append(mid, name)
			tasks = append(tasks, step(name, "root"))
		}
		runs = append(runs, newRun("fan", "t", append(tasks, step("join", mid...))...))
	}
	require.NoError(t, s.CreateRuns(ctx, runs))
	drain(t, s, 200*52, 1024)

	// Capped runs, admitted by the completions of the runs before them and
	// started by the same transactions (AdmitQueued, ContinueTasks).
	var capped []store.NewRun
	for i := range 2000 {
		r := newRun("capped", "t", step("one"))
		r.Concurrency, r.ConcurrencyKey = 1, fmt.Sprintf("k%d", i%200)
		capped = append(capped, r)
	}
	require.NoError(t, s.CreateRuns(ctx, capped))
	drainContinuing(t, s, len(capped), 1024)

	log.mu.Lock()
	stmts := log.stmts
	log.mu.Unlock()
	require.NotEmpty(t, stmts)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var threshold float64
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('jit_above_cost')::float8`).Scan(&threshold))
	for _, st := range stmts {
		name, plan := explain(t, conn, st)
		if plan == nil {
			continue
		}
		cost := plan["Total Cost"].(float64)
		require.Less(t, cost, threshold, "%s is costed %.0f, past jit_above_cost %.0f: Postgres would JIT-compile it", name, cost, threshold)
	}
}

// drain claims and completes n tasks, batch at a time.
func drain(t *testing.T, s *pgstore.Store, n, batch int) { drainWith(t, s, n, batch, false) }

// drainContinuing is drain through CompleteAndContinue: the tasks a batch
// makes ready are started with it, and completed in the next batch.
func drainContinuing(t *testing.T, s *pgstore.Store, n, batch int) { drainWith(t, s, n, batch, true) }

// drainWith is drain, continuing as drainContinuing when continuing is set
// (a continuation of limit 0 is CompleteTasks).
func drainWith(t *testing.T, s *pgstore.Store, n, batch int, continuing bool) {
	t.Helper()
	ctx := context.Background()
	var next []store.ClaimedTask
	for done := 0; done < n; {
		claimed := next
		if len(claimed) == 0 {
			var err error
			claimed, err = s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: batch, Lease: time.Minute})
			require.NoError(t, err)
			require.NotEmpty(t, claimed)
		}
		results := make([]store.TaskResult, len(claimed))
		for i, c := range claimed {
			results[i] = completed(c)
		}
		limit := 0
		if continuing {
			limit = len(results)
		}
		var err error
		_, next, err = s.CompleteAndContinue(ctx, results, store.ClaimParams{Worker: "w", Limit: limit, Lease: time.Minute})
		require.NoError(t, err)
		done += len(claimed)
	}
}

// explain returns the name of a logged statement and the top node of its
// plan for its arguments, or a nil plan for a statement that has none.
func explain(t *testing.T, conn *pgxpool.Conn, st loggedStatement) (string, map[string]any) {
	t.Helper()
	name := st.name()
	if strings.HasPrefix(name, "Analyze") {
		return name, nil // not a plannable statement
	}
	var plan []map[string]any
	require.NoError(t, conn.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+st.sql, st.args...).Scan(&plan), name)
	return name, plan[0]["Plan"].(map[string]any)
}

// scannedTables returns the tables a plan reads whole (Seq Scan nodes);
// a range of a history table by its own name.
func scannedTables(node map[string]any) []string {
	var out []string
	walkPlan(node, func(n map[string]any) {
		if n["Node Type"] == "Seq Scan" {
			out = append(out, fmt.Sprint(n["Relation Name"]))
		}
	})
	return out
}

// walkPlan calls visit with node and every node below it.
func walkPlan(node map[string]any, visit func(map[string]any)) {
	visit(node)
	children, _ := node["Plans"].([]any)
	for _, c := range children {
		walkPlan(c.(map[string]any), visit)
	}
}

// rangeSuffix is the suffix of a range (a partition) of a history table:
// dagen_tasks_p20261124t065031_007.
var rangeSuffix = regexp.MustCompile(`_p\d+(t\d{6}_\d+)?$`)

// wholeReads returns the tables a plan reads whole, a range of a history
// table by the table's name. A table or range of fewer than eight pages
// is left out: reading it costs less than an index lookup, and the
// planner rightly reads the empty ranges made ahead whole.
func wholeReads(t *testing.T, conn *pgxpool.Conn, plan map[string]any) []string {
	t.Helper()
	var out []string
	for _, rel := range scannedTables(plan) {
		var pages int64
		require.NoError(t, conn.QueryRow(context.Background(),
			"SELECT pg_relation_size($1::regclass) / current_setting('block_size')::bigint", rel).Scan(&pages))
		if pages >= 8 {
			out = append(out, rangeSuffix.ReplaceAllString(rel, ""))
		}
	}
	return out
}

// name returns the statement's sqlc name ("-- name: ClaimTasks :many").
func (st loggedStatement) name() string {
	name, _, _ := strings.Cut(strings.TrimPrefix(st.sql, "-- name: "), " ")
	return name
}

// explainLogged explains the statements log recorded (those named in
// only, or all when it is nil) as Postgres plans them for their
// arguments and as the generic plan a connection keeps once it has run a
// statement five times, and calls visit with each plan and its mode.
func explainLogged(t *testing.T, pool *pgxpool.Pool, log *statementLog, only []string, visit func(conn *pgxpool.Conn, name, mode string, plan map[string]any)) {
	t.Helper()
	ctx := context.Background()
	log.mu.Lock()
	stmts := log.stmts
	log.mu.Unlock()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		_, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode)
		require.NoError(t, err)
		for _, st := range stmts {
			if only != nil && !slices.Contains(only, st.name()) {
				continue
			}
			if name, plan := explain(t, conn, st); plan != nil {
				visit(conn, name, mode, plan)
			}
		}
	}
}

// readsWhole explains the statements log recorded (see explainLogged) and
// returns which of tables each reads whole ("name reads all of table
// (mode)", sorted, once each) and the names of the statements it
// explained.
func readsWhole(t *testing.T, pool *pgxpool.Pool, log *statementLog, only []string, tables ...string) ([]string, map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	var scans []string
	explainLogged(t, pool, log, only, func(conn *pgxpool.Conn, name, mode string, plan map[string]any) {
		seen[name] = true
		for _, table := range wholeReads(t, conn, plan) {
			if slices.Contains(tables, table) {
				scans = append(scans, name+" reads all of "+table+" ("+mode+")")
			}
		}
	})
	slices.Sort(scans)
	return slices.Compact(scans), seen
}

// TestBatchesFindRowsByKey checks that the creations, starts, claims,
// completions and continuations of large batches find their tasks, runs and tenants by key.
// While the tables are small next to a batch, the planner prefers to hash
// the whole table over one index lookup a row, and each batch of
// completions read every task three times (see docs/performance.md,
// "Batches find rows by key").
func TestBatchesFindRowsByKey(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)

	// Runs of many tenants, so that the tenants' table is worth an index
	// lookup too.
	var runs []store.NewRun
	for i := range 5000 {
		runs = append(runs, newRun("single", fmt.Sprintf("t%d", i%2000), step("a")))
	}
	for i := range 100 {
		runs = append(runs, newRun("fan", fmt.Sprintf("t%d", i), step("root"), step("x", "root"), step("y", "root"), step("join", "x", "y")))
	}
	require.NoError(t, s.CreateRuns(ctx, runs[:1]))
	require.NoError(t, s.CreateRuns(ctx, runs[1:]))
	_, err = pool.Exec(ctx, "ANALYZE dagen_runs, dagen_tasks, dagen_tenant_groups")
	require.NoError(t, err)
	// A start of many runs, half of their roots started.
	var starts []store.NewRun
	for i := range 200 {
		starts = append(starts, newRun("single", fmt.Sprintf("s%d", i), step("a")))
	}
	started, err := s.StartRuns(ctx, starts, store.ClaimParams{Worker: "w", Limit: 100, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, started, 100)
	// A heartbeat of the worker that holds half of the runs it started
	// (NotHeldTasks: the leases it holds are looked up).
	var held []store.HeldAttempt
	for i := range started[:50] {
		held = append(held, store.HeldOf(&started[i]))
	}
	_, err = s.Heartbeat(ctx, "w", time.Minute, held)
	require.NoError(t, err)
	// The leader's look for queued tasks no worker serves (here, none is
	// served: each entry's task is looked up).
	_, err = s.ReportUnserved(ctx, time.Hour, 100)
	require.NoError(t, err)
	// The started roots are retried later: decided on the rows read
	// (GetTasks), as every outcome but a completion is (a completion is
	// decided on its claim's view).
	results := make([]store.TaskResult, len(started))
	for i, c := range started {
		results[i] = store.TaskResult{RunID: c.RunID, Step: c.Step, Attempt: c.Attempt, Claim: c.Claim, Outcome: store.OutcomeRetry, Error: "later", Delay: time.Hour}
	}
	_, err = s.CompleteTasks(ctx, results)
	require.NoError(t, err)
	drainContinuing(t, s, 5000+100*4, 500)
	// Fan-outs completed without continuation: their roots' completions
	// enqueue the children (Enqueue; the creations enqueued by
	// EnqueuePlain, none of their steps having a rate limit).
	var fans []store.NewRun
	for i := range 100 {
		fans = append(fans, newRun("fan", fmt.Sprintf("t%d", i), step("root"), step("x", "root"), step("y", "root"), step("join", "x", "y")))
	}
	require.NoError(t, s.CreateRuns(ctx, fans))
	drain(t, s, 100*4, 100)

	scans, seen := readsWhole(t, pool, log, nil, "dagen_tasks", "dagen_runs", "dagen_tenant_groups")
	require.Empty(t, scans)
	for _, name := range []string{"EnsureTenants", "InsertTasks", "EnqueuePlain", "Enqueue", "StartedTasks", "ClaimTasks", "LockRuns", "GetTasks", "UpdateTasks", "UpdateRuns", "DecrementChildren", "NotHeldTasks", "TenantsAhead", "ContinueTasks", "ReportUnserved"} {
		require.True(t, seen[name], "no %s statement ran", name)
	}
}

// TestFlowStatementsReadNoBacklogWhole checks the statements of flow
// control against a backlog: the claim of a schema with a rate limit
// (ClaimTasksFlow) and the admissions of capped runs (AdmitQueued) read the
// queue and the capped runs' queue by key or place, never whole. The flow
// claim's look for entries with a priority read the whole queue at every
// claim, and each admission hashed the whole run queue (see
// docs/performance.md, "Flow control's statements read no backlog whole").
func TestFlowStatementsReadNoBacklogWhole(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	require.NoError(t, s.PutRateLimits(ctx, []store.RateLimit{{Name: "wide", Rate: 1e6, Burst: 1e6}}))
	// The queues' statistics are those of empty tables, as a busy queue's
	// often are: no value of priority is known.
	_, err = pool.Exec(ctx, "ANALYZE dagen_ready, dagen_run_queue")
	require.NoError(t, err)

	var runs []store.NewRun
	for i := range 4000 {
		r := newRun("capped", fmt.Sprintf("t%d", i%40), step("a"))
		r.Concurrency, r.ConcurrencyKey = 1, fmt.Sprintf("k%d", i%100)
		runs = append(runs, r)
	}
	for i := range 4000 {
		runs = append(runs, newRun("single", fmt.Sprintf("t%d", i%40), step("a")))
	}
	require.NoError(t, s.CreateRuns(ctx, runs))
	_, err = pool.Exec(ctx, "ANALYZE dagen_runs, dagen_tasks")
	require.NoError(t, err)
	drainContinuing(t, s, 1000, 100)

	scans, seen := readsWhole(t, pool, log, []string{"ClaimTasksFlow", "AdmitQueued"}, "dagen_ready", "dagen_run_queue", "dagen_runs", "dagen_tasks")
	require.Empty(t, scans)
	require.True(t, seen["ClaimTasksFlow"], "no flow claim ran")
	require.True(t, seen["AdmitQueued"], "no admission ran")
	require.Empty(t, rescans(t, pool, log, "AdmitQueued"), "an admission's cost grows with the square of the slots or runs it admits")
}

// rescans explains the logged statements named name (see explainLogged)
// and lists the nested loops that read a CTE on their inner side: the CTE
// is read again for each outer row, a cost that grows with the product of
// the two (the planner takes a CTE for ten rows).
func rescans(t *testing.T, pool *pgxpool.Pool, log *statementLog, name string) []string {
	t.Helper()
	var out []string
	explainLogged(t, pool, log, []string{name}, func(_ *pgxpool.Conn, name, mode string, plan map[string]any) {
		walkPlan(plan, func(n map[string]any) {
			if n["Node Type"] != "Nested Loop" {
				return
			}
			children, _ := n["Plans"].([]any)
			for _, c := range children {
				inner := c.(map[string]any)
				if inner["Parent Relationship"] != "Inner" {
					continue
				}
				walkPlan(inner, func(m map[string]any) {
					if m["Node Type"] == "CTE Scan" {
						out = append(out, fmt.Sprintf("%s rescans CTE %v (%s)", name, m["CTE Name"], mode))
					}
				})
			}
		})
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// TestLeaseRemovalUsesTheIndex checks how leases are removed. dagen_leases
// churns a row per claim, so a generic plan cached while it was nearly
// empty scans it whole once it has grown with dead rows, at every
// completion (see docs/performance.md, "Leases removed by key"). The store
// therefore sends DeleteLeases between FindByIndexBegin and FindByIndexEnd;
// under the first, a plan made while the table is empty finds leases by
// their key. A claim's lease is deleted by the next transaction that ends
// leases after the claim's last completion: here, the second claim's
// completion deletes the first claim's lease.
func TestLeaseRemovalUsesTheIndex(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	for _, sql := range []string{
		`ANALYZE dagen_leases`, // empty
		`INSERT INTO dagen_leases (id, worker, lease_until, run_ids, tasks, events)
		 SELECT -g, 'w', now(), ARRAY[gen_random_uuid()], '{t}', ARRAY[-g] FROM generate_series(1, 50000) g`,
		`DELETE FROM dagen_leases WHERE id < 0`, // dead rows, no vacuum yet
	} {
		_, err := pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{newRun("w", "t", step("a")), newRun("w", "t", step("a"))}))
	var leases []int64
	for range 2 {
		claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute, Signatures: []string{"w"}})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		var lease int64
		require.NoError(t, pool.QueryRow(ctx, "SELECT id FROM dagen_leases WHERE $1::uuid = ANY(run_ids)", claimed[0].RunID).Scan(&lease))
		leases = append(leases, lease)
		_, err = s.CompleteTasks(ctx, []store.TaskResult{completed(claimed[0])})
		require.NoError(t, err)
	}
	var left []int64
	rows, err := pool.Query(ctx, "SELECT id FROM dagen_leases WHERE id > 0 ORDER BY id")
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		left = append(left, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, leases[1:], left, "the second completion deleted the first claim's lease, and only it")

	log.mu.Lock()
	stmts := log.stmts
	log.mu.Unlock()
	var del, before *loggedStatement
	for i, st := range stmts {
		if strings.HasPrefix(st.sql, "-- name: DeleteLeases ") {
			require.Positive(t, i)
			require.True(t, strings.HasPrefix(stmts[i-1].sql, "-- name: FindByIndexBegin "),
				"DeleteLeases follows %.40q, not FindByIndexBegin", stmts[i-1].sql)
			require.Less(t, i+1, len(stmts))
			require.True(t, strings.HasPrefix(stmts[i+1].sql, "-- name: FindByIndexEnd "),
				"DeleteLeases is followed by %.40q, not FindByIndexEnd", stmts[i+1].sql)
			del, before = &stmts[i], &stmts[i-1]
		}
	}
	require.NotNil(t, del, "a completion deletes the lease of the claim answered before it")

	// Planned under the statement sent before it while the table is empty,
	// as a connection may plan it and keep the plan, DeleteLeases finds the
	// leases by key (without FindByIndexBegin it scans the table).
	_, err = pool.Exec(ctx, "TRUNCATE dagen_leases")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ANALYZE dagen_leases")
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, before.sql, before.args...)
	require.NoError(t, err)
	var plan []map[string]any
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+del.sql, del.args...).Scan(&plan))
	require.NotContains(t, fmt.Sprint(plan), "Seq Scan", "DeleteLeases scans dagen_leases: %v", plan)
}

// TestCompletionRoundTrips counts the round trips of a completion: BEGIN
// with the run locks and the tasks, the children counted down, then the
// other writes with COMMIT.
func TestCompletionRoundTrips(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{newRun("w", "t", step("a"), step("b", "a"))}))
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	log.mu.Lock()
	log.sends = 0
	log.mu.Unlock()
	outs, err := s.CompleteTasks(ctx, []store.TaskResult{completed(claimed[0])})
	require.NoError(t, err)
	require.Equal(t, 1, outs[0].Enqueued, "b was enqueued")
	log.mu.Lock()
	defer log.mu.Unlock()
	require.Equal(t, 3, log.sends, "lock runs and read tasks, count children down, write and commit")
}

// TestReadRunRoundTrips checks that a run and its tasks are read in one
// round trip, and that the pool's connection is free again after it.
func TestReadRunRoundTrips(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	r := newRun("w", "t", step("a"), step("b", "a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
	log.mu.Lock()
	log.sends = 0
	log.mu.Unlock()
	run, tasks, err := s.ReadRun(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, run.Status)
	require.Len(t, tasks, 2)
	log.mu.Lock()
	require.Equal(t, 1, log.sends)
	log.mu.Unlock()
	require.Zero(t, pool.Stat().AcquiredConns(), "the batch's connection went back to the pool")

	_, _, err = s.ReadRun(ctx, dag.NewRunID())
	require.ErrorIs(t, err, store.ErrRunNotFound)
	require.Zero(t, pool.Stat().AcquiredConns())
}

// TestTriggersKeepOnePlan checks that a connection creating runs one at a
// time, and completing tasks that enqueue their children, keeps one plan
// for the statements that write tasks, add tenants, count children down
// and enqueue, rather than planning them at every trigger and completion:
// their array arguments used to make each plan for a few rows cost less
// than the generic plan, and planning took a good share of a trigger's
// time (see docs/performance.md, "Statements keep one plan"). A
// completion's Enqueue must also not come between FindByIndexBegin and
// FindByIndexEnd, which have the statements between them plan for indexes
// alone.
func TestTriggersKeepOnePlan(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t, pgtest.Schema(t), 1) // one connection: one set of prepared statements
	require.NoError(t, pgstore.Migrate(ctx, pool))
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	const triggers = 20
	for i := range triggers {
		require.NoError(t, s.CreateRuns(ctx, []store.NewRun{newRun("w", fmt.Sprintf("t%d", i%3), step("a"), step("b", "a"))}))
		drain(t, s, 2, 1) // a, which enqueues b, then b
	}
	// The triggers enqueue a by EnqueuePlain (no step has a rate limit),
	// the completions b by Enqueue.
	executions := map[string]int64{"InsertTasks": triggers, "EnsureTenants": triggers, "EnqueuePlain": triggers, "Enqueue": triggers, "DecrementChildren": triggers}
	plans := preparedPlans(t, pool)
	for _, name := range []string{"InsertTasks", "EnsureTenants", "EnqueuePlain", "Enqueue", "DecrementChildren"} {
		p, ok := plans[name]
		require.True(t, ok, "%s was not prepared: %v", name, plans)
		// Postgres plans the first five runs for their arguments, then
		// compares with the generic plan.
		require.LessOrEqual(t, p[1], int64(5), "%s: %d generic plans, %d planned for their arguments", name, p[0], p[1])
		require.Equal(t, executions[name], p[0]+p[1], name)
	}
}

// TestWorkerRoundsFindTasksByKey checks the statements a worker or the
// leader runs every few seconds whatever the load: the heartbeat's look
// for the tasks leased to a worker that it never received
// (NotHeldTasks), and the look for queued tasks no worker serves
// (ReportUnserved). Joined to the tasks table, the planner hashed the
// leases or the queue and read every task of every range to probe them,
// at every round (see docs/performance.md, "Worker rounds find tasks by
// key"); each task is found by its key instead.
func TestWorkerRoundsFindTasksByKey(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	var runs []store.NewRun
	for range 20000 {
		runs = append(runs, newRun("w", "t", step("a"), step("b", "a")))
	}
	createInBatches(t, s, runs)
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 5000, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 5000)
	_, err = pool.Exec(ctx, "ANALYZE dagen_runs, dagen_tasks, dagen_leases")
	require.NoError(t, err)
	var held []store.HeldAttempt
	for i := range claimed[:4000] {
		held = append(held, store.HeldOf(&claimed[i]))
	}
	_, err = s.Heartbeat(ctx, "w", time.Minute, held)
	require.NoError(t, err)
	// 15,000 roots queued, all of them served (the case under load).
	require.NoError(t, s.Serve(ctx, "w", store.Serving{Signatures: []string{"w"}, Concurrency: 5000}))
	_, err = s.ReportUnserved(ctx, time.Minute, 100)
	require.NoError(t, err)

	log.mu.Lock()
	stmts := log.stmts
	log.mu.Unlock()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	found := map[string]bool{}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		_, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode)
		require.NoError(t, err)
		for _, st := range stmts {
			name, plan := explain(t, conn, st)
			if name != "NotHeldTasks" && name != "ReportUnserved" {
				continue
			}
			found[name] = true
			require.NotContains(t, wholeReads(t, conn, plan), "dagen_tasks", "%s reads all tasks (%s)", name, mode)
		}
	}
	require.Equal(t, map[string]bool{"NotHeldTasks": true, "ReportUnserved": true}, found)
}

// TestClaimsKeepTheirGenericPlan checks that claims run the plan the
// connection cached for ClaimTasks, sent after KeepGenericPlan in the same
// round trip, and that this plan, made while the queue was empty, still
// takes the queue's rows in id order from its index once the queue is
// large: the planner, left to choose, planned every claim anew, for
// nothing (see docs/performance.md, "Claims keep their generic plan").
func TestClaimsKeepTheirGenericPlan(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPoolOf(t, 1) // the connection that prepares ClaimTasks counts its plans
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ANALYZE dagen_ready")
	require.NoError(t, err)

	var runs []store.NewRun
	for i := range 2000 {
		runs = append(runs, newRun("single", fmt.Sprintf("t%d", i%10), step("a")))
	}
	require.NoError(t, s.CreateRuns(ctx, runs))
	for range 8 { // past the five executions after which Postgres may settle on a plan
		claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, claimed, 10)
	}

	log.mu.Lock()
	stmts := log.stmts
	log.mu.Unlock()
	claims := 0
	for i, st := range stmts {
		if strings.HasPrefix(st.sql, "-- name: ClaimTasks ") {
			claims++
			require.Positive(t, i)
			require.True(t, strings.HasPrefix(stmts[i-1].sql, "-- name: KeepGenericPlan "),
				"ClaimTasks follows %.40q, not KeepGenericPlan", stmts[i-1].sql)
		}
	}
	require.Equal(t, 8, claims)

	// The claims ran the cached plan: counted on the connection that
	// prepared ClaimTasks, the pool's only one.
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var generic, custom int64
	require.NoError(t, conn.QueryRow(ctx,
		`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '-- name: ClaimTasks %'`).Scan(&generic, &custom))
	require.Equal(t, int64(8), generic)
	require.Zero(t, custom)

	// That plan, made from the statistics of an empty queue, read with
	// 2,000 entries queued: the claim reads its ten from the index.
	top := genericPlanOn(t, conn, log, "ClaimTasks")()
	require.NotContains(t, scannedTables(top), "dagen_ready", "the claim's generic plan reads the whole queue")
	require.Contains(t, indexScans(top), "dagen_ready_id_idx")
	require.Empty(t, wholeReads(t, conn, top), "the claim's generic plan reads tables whole")
}

// TestCompletionsKeepTheirGenericPlan: a completion's statements run the
// generic plan of their connection from the first execution on (see
// completeOnce), DeleteLeases too (under FindByIndexBegin).
func TestCompletionsKeepTheirGenericPlan(t *testing.T) {
	ctx := context.Background()
	pool, _ := tracedPoolOf(t, 1) // the connection that prepares the statements counts their plans
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)

	var runs []store.NewRun
	for i := range 8 {
		runs = append(runs, newRun("chain", fmt.Sprintf("t%d", i%2), step("a"), step("b", "a")))
	}
	require.NoError(t, s.CreateRuns(ctx, runs))
	completions := 0
	for range 2 * len(runs) { // each claim takes one task: a batch a completion
		claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		_, err = s.CompleteTasks(ctx, []store.TaskResult{completed(claimed[0])})
		require.NoError(t, err)
		completions++
	}
	require.Equal(t, 16, completions)

	plans := preparedPlans(t, pool)
	for _, name := range []string{"LockRuns", "UpdateTasks", "UpdateRuns", "DecrementChildren", "Enqueue", "DeleteLeases"} {
		p, ok := plans[name]
		require.True(t, ok, "no completion ran %s", name)
		require.Zero(t, p[1], "%s was planned for its parameters %d times", name, p[1])
		require.Positive(t, p[0], name)
	}
}

// preparedPlans returns, by sqlc name, how many times each statement
// prepared on the connection q reaches ran a generic plan ([0]) and a plan
// made for its arguments ([1]): q is a pool of one connection, or one of
// its connections.
func preparedPlans(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) map[string][2]int64 {
	t.Helper()
	rows, err := q.Query(context.Background(), `SELECT split_part(statement, ' ', 3), generic_plans, custom_plans
		FROM pg_prepared_statements WHERE statement LIKE '-- name: %'`)
	require.NoError(t, err)
	plans := map[string][2]int64{}
	for rows.Next() {
		var name string
		var generic, custom int64
		require.NoError(t, rows.Scan(&name, &generic, &custom))
		plans[name] = [2]int64{generic, custom}
	}
	require.NoError(t, rows.Err())
	return plans
}

// indexScans returns the indexes a plan reads.
func indexScans(node map[string]any) []string {
	var out []string
	walkPlan(node, func(n map[string]any) {
		if name, ok := n["Index Name"]; ok {
			out = append(out, fmt.Sprint(name))
		}
	})
	return out
}

// TestCountdownFindsEachChildOnce checks how DecrementChildren matches the
// rows it counts down with their counts. Its generic plan joins the rows,
// taken by ctid, to the counts by key; where the statistics said few tasks
// are PENDING (a range analyzed once most of its tasks had finished), the
// planner took the rows for one or two and compared every count with every
// row, which took most of the statement's time (see docs/performance.md,
// "The countdown checks PENDING on its lookups").
func TestCountdownFindsEachChildOnce(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	chains := func(n int) []store.NewRun {
		runs := make([]store.NewRun, n)
		for i := range runs {
			runs[i] = newRun("w", "t", step("a"), step("b", "a"))
		}
		return runs
	}
	// Finished runs: the statistics see no PENDING task.
	createInBatches(t, s, chains(2000))
	drain(t, s, 4000, 500)
	_, err = pool.Exec(ctx, "ANALYZE dagen_tasks")
	require.NoError(t, err)

	// 300 first steps complete together: 300 children counted down.
	require.NoError(t, s.CreateRuns(ctx, chains(300)))
	claimAndComplete(t, s, 300)

	walkPlan(genericPlan(t, pool, log, "DecrementChildren")(), func(n map[string]any) {
		if filter, ok := n["Join Filter"]; ok {
			t.Errorf("DecrementChildren's generic plan compares each count with each row: %v, Join Filter %v", n["Node Type"], filter)
		}
	})
}
