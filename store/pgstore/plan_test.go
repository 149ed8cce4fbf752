package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/store"
	"github.com/dagenhq/dagen/store/pgstore"
)

// statementLog records the named statements a pool runs, with their
// arguments, whether sent alone or in a batch.
type statementLog struct {
	mu    sync.Mutex
	stmts []loggedStatement
}

type loggedStatement struct {
	sql  string
	args []any
}

func (l *statementLog) add(sql string, args []any) {
	if !strings.HasPrefix(sql, "-- name: ") {
		return
	}
	l.mu.Lock()
	l.stmts = append(l.stmts, loggedStatement{sql, args})
	l.mu.Unlock()
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(d.SQL, d.Args)
	return ctx
}
func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (l *statementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.add(d.SQL, d.Args)
}
func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// tracedPool opens a pool on a new migrated schema whose statements are
// logged.
func tracedPool(t *testing.T) (*pgxpool.Pool, *statementLog) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	require.NoError(t, err)
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
// none is costed high enough for Postgres to JIT-compile it. A bad row
// estimate once made one enqueue spend 370 ms compiling.
func TestLargeBatchesAreNotJITCompiled(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s := pgstore.New(pool, nil)

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
	for done := 0; done < 200*52; {
		claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1024, Lease: time.Minute, Workflows: []string{"fan"}})
		require.NoError(t, err)
		require.NotEmpty(t, claimed)
		results := make([]store.TaskResult, len(claimed))
		for i, c := range claimed {
			results[i] = completed(c)
		}
		_, err = s.CompleteTasks(ctx, results)
		require.NoError(t, err)
		done += len(claimed)
	}

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
		name, _, _ := strings.Cut(strings.TrimPrefix(st.sql, "-- name: "), " ")
		if name == "AnalyzeHotTables" {
			continue // not a plannable statement
		}
		var plan []map[string]any
		require.NoError(t, conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+st.sql, st.args...).Scan(&plan), name)
		top := plan[0]["Plan"].(map[string]any)
		cost := top["Total Cost"].(float64)
		require.Less(t, cost, threshold, "%s is costed %.0f, past jit_above_cost %.0f: Postgres would JIT-compile it", name, cost, threshold)
	}
}

// TestLeaseRemovalUsesTheIndex checks how leases are removed. dagen_leases
// churns a row per step, so a generic plan cached while it was nearly
// empty scans it whole once it has grown with dead rows (in the benchmark,
// 28 ms a completion). The store therefore sends DeleteLeases right after
// PlanEachExecution; planned that way, with statistics that still say the
// table is empty and 50,000 dead rows in it, it finds leases by their key.
func TestLeaseRemovalUsesTheIndex(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	for _, sql := range []string{
		`ANALYZE dagen_leases`, // empty
		`INSERT INTO dagen_leases (id, run_id, task, worker, lease_until)
		 SELECT -g, gen_random_uuid(), 't', 'w', now() FROM generate_series(1, 50000) g`,
		`DELETE FROM dagen_leases WHERE id < 0`, // dead rows, no vacuum yet
	} {
		_, err := pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	s := pgstore.New(pool, nil)
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{newRun("w", "t", step("a"))}))
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute, Workflows: []string{"w"}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	_, err = s.CompleteTasks(ctx, []store.TaskResult{completed(claimed[0])})
	require.NoError(t, err)

	log.mu.Lock()
	stmts := log.stmts
	log.mu.Unlock()
	var del *loggedStatement
	for i, st := range stmts {
		if strings.HasPrefix(st.sql, "-- name: DeleteLeases ") {
			require.Positive(t, i)
			require.True(t, strings.HasPrefix(stmts[i-1].sql, "-- name: PlanEachExecution "),
				"DeleteLeases follows %.40q, not PlanEachExecution", stmts[i-1].sql)
			del = &stmts[i]
		}
	}
	require.NotNil(t, del, "a completion ends its task's lease")

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`)
	require.NoError(t, err)
	var plan []map[string]any
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+del.sql, del.args...).Scan(&plan))
	require.NotContains(t, fmt.Sprint(plan), "Seq Scan", "DeleteLeases scans dagen_leases: %v", plan)
}
