package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestStatisticsFollowGrowth checks that the store analyzes its tables as
// they grow from empty, without waiting for autovacuum: the planner's row
// count of the tasks table (-1 until the first ANALYZE) keeps up with it.
func TestStatisticsFollowGrowth(t *testing.T) {
	s := stores(t, 1, nil)[0]
	reltuples := func() float64 { return reltuplesOf(t, s, "dagen_tasks") }
	require.Less(t, reltuples(), 1.0, "a new schema's tasks table has no statistics yet")

	var runs []store.NewRun
	for i := range 8000 {
		runs = append(runs, newRun("w", fmt.Sprint("t", i%4), step("a"), step("b", "a")))
	}
	createInBatches(t, s, runs[:1000])
	after2k := reltuples()
	require.GreaterOrEqual(t, after2k, 1000.0, "2,000 tasks created: the table was analyzed")
	createInBatches(t, s, runs[1000:])
	require.GreaterOrEqual(t, reltuples(), 4*after2k, "16,000 tasks created: analyzed again as the table grew")
}

// TestStatisticsFollowQueueGrowth checks that the ready queue's statistics
// follow its growth when the tasks table does not grow: a fan-out's runs
// are all created up front, analyzed with their roots alone in the queue,
// and the queue fills only as the roots complete.
func TestStatisticsFollowQueueGrowth(t *testing.T) {
	ctx := context.Background()
	s := stores(t, 1, nil)[0]
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

	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 100, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 100)
	results := make([]store.TaskResult, len(claimed))
	for i, c := range claimed {
		results[i] = completed(c)
	}
	_, err = s.CompleteTasks(ctx, results)
	require.NoError(t, err)
	require.GreaterOrEqual(t, reltuples(), 4000.0, "5,000 children enqueued: the queue was analyzed again")
}

// TestStatisticsFollowTenantGrowth checks that the tenants' table is
// analyzed as it grows while the tasks table and the queue barely do: a
// plan for EnsureTenants or Enqueue made while it held a few tenants reads
// it whole, and only fresh statistics replace that plan.
func TestStatisticsFollowTenantGrowth(t *testing.T) {
	s := stores(t, 1, nil)[0]
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
	require.GreaterOrEqual(t, reltuples(), 1000.0, "3,000 tenants more: analyzed again")
}

// reltuplesOf is the planner's row count of a table: -1 before it was
// first analyzed.
func reltuplesOf(t *testing.T, s *pgstore.Store, table string) float64 {
	t.Helper()
	var n float64
	require.NoError(t, s.Pool().QueryRow(context.Background(), `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, table).Scan(&n))
	return n
}
