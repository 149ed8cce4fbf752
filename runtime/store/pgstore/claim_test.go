package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestClaimLeavesOutKnownInputs checks that a claim sends no input for the
// runs the worker says it holds (ClaimParams.Known), and sends it for the
// others: a large input crosses the wire once to a worker.
func TestClaimLeavesOutKnownInputs(t *testing.T) {
	ctx := context.Background()
	s := stores(t, 1, nil)[0]
	held := newRun("w", "t1", step("a"), step("b"))
	held.Input = []byte(`"large"`)
	fresh := newRun("w", "t2", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{held, fresh}))
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w1", Limit: 10, Lease: time.Minute, Known: []dag.RunID{held.ID}})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	for _, c := range claimed {
		if c.RunID == held.ID {
			require.True(t, c.InputOmitted, "%s: left out", c.Step)
			require.Nil(t, c.Input)
		} else {
			require.False(t, c.InputOmitted)
			require.Equal(t, fresh.Input, c.Input)
		}
	}
}

// fanOutRoots creates runs of a root a and children b1…bn, each run with
// its own tenant and input, claims their roots and returns their results,
// each with an output of its own, and the outputs by run.
func fanOutRoots(t *testing.T, s store.Store, runs, children int) ([]store.TaskResult, map[dag.RunID][]byte) {
	t.Helper()
	ctx := context.Background()
	var nrs []store.NewRun
	for i := range runs {
		tasks := []store.NewTask{step("a")}
		for j := range children {
			tasks = append(tasks, step(fmt.Sprintf("b%d", j+1), "a"))
		}
		nr := newRun("fan", fmt.Sprintf("t%d", i), tasks...)
		nr.Input = []byte(fmt.Sprintf(`{"run":%d}`, i))
		nrs = append(nrs, nr)
	}
	require.NoError(t, s.CreateRuns(ctx, nrs))
	roots, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: runs, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, roots, runs)
	outs := make(map[dag.RunID][]byte)
	var results []store.TaskResult
	for i, r := range roots {
		res := completed(r)
		res.Output = []byte(fmt.Sprint(100 + i))
		outs[r.RunID] = res.Output
		results = append(results, res)
	}
	return results, outs
}

// requireOwnRunsAndParents checks that every claimed child has its own
// run's workflow, tenant and input, and its own root's output as parent.
func requireOwnRunsAndParents(t *testing.T, claimed []store.ClaimedTask, runs map[dag.RunID][]byte) {
	t.Helper()
	tenants := make(map[dag.RunID]string)
	for _, c := range claimed {
		require.Equal(t, "fan", c.Workflow, c.Step)
		require.False(t, c.InputOmitted)
		if tn, ok := tenants[c.RunID]; ok {
			require.Equal(t, tn, c.Tenant, "%s/%s: the tenant of its run", c.RunID, c.Step)
		}
		tenants[c.RunID] = c.Tenant
		require.JSONEq(t, fmt.Sprintf(`{"run":%s}`, strings.TrimPrefix(c.Tenant, "t")), string(c.Input), "%s/%s: its run's input", c.RunID, c.Step)
		require.Equal(t, []store.ParentResult{{Step: "a", Status: store.TaskCompleted, Output: runs[c.RunID]}}, c.Parents, "%s/%s", c.RunID, c.Step)
	}
	require.Len(t, tenants, len(runs), "tenants of distinct runs")
}

// TestClaimReadsSharedRowsOnce checks that a claim reads each run's row
// once, and the parents that tasks of one run share once, however many of
// its tasks it takes (a fan-out's children read their one parent, and
// their run, fifty times a run), and that every task still gets its own
// run's fields and its own parents.
func TestClaimReadsSharedRowsOnce(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	p := store.ClaimParams{Worker: "w", Limit: 64, Lease: time.Minute}
	_, err = s.ClaimTasks(ctx, p) // nothing ready: logs the statement
	require.NoError(t, err)
	claim := log.last("ClaimTasks")
	require.NotEmpty(t, claim.sql)

	roots, runs := fanOutRoots(t, s, 3, 8)
	_, err = s.CompleteTasks(ctx, roots)
	require.NoError(t, err)
	// The claim as EXPLAIN ANALYZE runs it, in a transaction rolled back.
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	var plan []map[string]any
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+claim.sql, claim.args...).Scan(&plan))
	require.NoError(t, tx.Rollback(ctx))
	top := plan[0]["Plan"].(map[string]any)
	require.EqualValues(t, 24, top["Actual Rows"], "tasks claimed")
	require.Equal(t, 3, lookups(top, "dagen_runs", "r"), "run rows read: one a run")
	require.Equal(t, 3, lookups(top, "dagen_tasks", "pt"), "parent rows read: one a run")

	claimed, err := s.ClaimTasks(ctx, p)
	require.NoError(t, err)
	require.Len(t, claimed, 24)
	requireOwnRunsAndParents(t, claimed, runs)
}

// lookups sums the loops of the index scans of table's ranges under alias
// (or alias_N) that found a row.
func lookups(node map[string]any, table, alias string) int {
	n := 0
	if strings.HasPrefix(fmt.Sprint(node["Relation Name"]), table) && node["Node Type"] == "Index Scan" &&
		(node["Alias"] == alias || strings.HasPrefix(fmt.Sprint(node["Alias"]), alias+"_")) {
		if rows, _ := node["Actual Rows"].(float64); rows > 0 {
			n += int(node["Actual Loops"].(float64))
		}
	}
	children, _ := node["Plans"].([]any)
	for _, c := range children {
		n += lookups(c.(map[string]any), table, alias)
	}
	return n
}

// TestContinuedTasksGetTheirOwnRunsAndParents checks the tasks that a
// completion starts (CompleteAndContinue), which share their run's row and
// their parents' results as a claim's do: each gets its own.
func TestContinuedTasksGetTheirOwnRunsAndParents(t *testing.T) {
	ctx := context.Background()
	s := stores(t, 1, nil)[0]
	results, runs := fanOutRoots(t, s, 3, 3)
	_, next, err := s.CompleteAndContinue(ctx, results, store.ClaimParams{Worker: "w", Limit: 9, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, next, 9)
	requireOwnRunsAndParents(t, next, runs)
}

// TestContinuationTakesParentsFromTheBatch checks which continued tasks
// get their parents' results from the completing batch rather than from
// their rows (ContinueTasks's own_parents): only those whose parents all
// completed in the batch with an output; a child with a parent resolved
// earlier, or whose parent completed without an output (its row keeps
// what it had), has them read. Either way each gets its parents in its
// own order. Likewise a run's input comes with the lock of its run
// (own_inputs) when it is small, and is read when it is not.
func TestContinuationTakesParentsFromTheBatch(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	// fan: a -> b; diamond: x, a -> c (c lists a first); bare: a (no output) -> b.
	fan := newRun("w", "t", step("a"), step("b", "a"))
	diamond := newRun("w", "t", step("x"), step("a"), step("c", "a", "x"))
	bare := newRun("w", "t", step("a"), step("b", "a"))
	bare.Input = []byte(`"` + strings.Repeat("large ", 400) + `"`)
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{fan, diamond, bare}))
	inputs := map[dag.RunID][]byte{fan.ID: fan.Input, diamond.ID: diamond.Input, bare.ID: bare.Input}
	roots, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, roots, 4)
	var first, second []store.TaskResult
	for _, r := range roots {
		res := completed(r)
		switch {
		case r.RunID == diamond.ID && r.Step == "x":
			res.Output = []byte(`"x"`)
			first = append(first, res) // resolved before a, in a batch of its own
			continue
		case r.RunID == bare.ID:
			res.Output = nil
		default:
			res.Output = []byte(fmt.Sprintf(`"%s of %s"`, r.Step, r.Tenant))
		}
		second = append(second, res)
	}
	_, err = s.CompleteTasks(ctx, first)
	require.NoError(t, err)
	_, next, err := s.CompleteAndContinue(ctx, second, store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, next, 3)
	got := make(map[dag.RunID][]store.ParentResult)
	for _, c := range next {
		got[c.RunID] = c.Parents
		require.False(t, c.InputOmitted)
		require.Equal(t, string(inputs[c.RunID]), string(c.Input), "%s/%s: its run's input", c.RunID, c.Step)
	}
	require.Equal(t, []store.ParentResult{{Step: "a", Status: store.TaskCompleted, Output: []byte(`"a of t"`)}}, got[fan.ID])
	require.Equal(t, []store.ParentResult{
		{Step: "a", Status: store.TaskCompleted, Output: []byte(`"a of t"`)},
		{Step: "x", Status: store.TaskCompleted, Output: []byte(`"x"`)},
	}, got[diamond.ID])
	require.Equal(t, []store.ParentResult{{Step: "a", Status: store.TaskCompleted}}, got[bare.ID])

	// What ContinueTasks was told it need not read, by run.
	st := log.last("ContinueTasks")
	require.NotEmpty(t, st.sql)
	var ids []pgtype.UUID
	var flags [][]bool // own_parents, own_inputs
	for _, a := range st.args {
		switch v := a.(type) {
		case []pgtype.UUID:
			if ids == nil {
				ids = v
			}
		case []bool:
			flags = append(flags, v)
		}
	}
	require.Len(t, flags, 2)
	byRun, inputByRun := make(map[dag.RunID]bool), make(map[dag.RunID]bool)
	for i, id := range ids {
		byRun[dag.RunID(id.Bytes)], inputByRun[dag.RunID(id.Bytes)] = flags[0][i], flags[1][i]
	}
	require.Equal(t, map[dag.RunID]bool{fan.ID: true, diamond.ID: true, bare.ID: false}, inputByRun, "inputs that came with the locks")
	require.Equal(t, map[dag.RunID]bool{fan.ID: true, diamond.ID: false, bare.ID: false}, byRun)
}
