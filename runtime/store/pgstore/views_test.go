package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestCompletionsDecideOnClaimViews: a completed result of an attempt the
// store claimed is decided on what the claim returned, without reading the
// task again; so is one of a step a continuation started, and one of a
// root its trigger started.
func TestCompletionsDecideOnClaimViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	runs := []store.NewRun{
		newRun("chain", "acme", step("a"), step("b", "a")),
		newRun("chain", "acme", step("a"), step("b", "a")),
	}
	require.NoError(t, s.CreateRuns(ctx, runs[:1]))
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	started, err := s.StartRuns(ctx, runs[1:], store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, started, 1)
	claimed = append(claimed, started...)

	reads := log.count("GetTasks")
	outs, next, err := s.CompleteAndContinue(ctx, results(claimed, completed), store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	for _, o := range outs {
		require.Equal(t, store.OutcomeCompleted, o.Outcome)
	}
	require.Len(t, next, 2, "both b steps start in the completion")
	outs, err = s.CompleteTasks(ctx, results(next, completed))
	require.NoError(t, err)
	for _, o := range outs {
		require.Equal(t, store.RunCompleted, o.RunStatus)
	}
	require.Equal(t, reads, log.count("GetTasks"), "no completion read its tasks")
	for _, r := range runs {
		got, err := s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, got.Status)
	}
}

// TestCompletionsReadTasksThatMovedOn: a result whose task moved on since
// the claim (its run was cancelled, or the task rescued and claimed again
// by another worker) is stale, as it would be had the task been read; the
// batch's other results are applied all the same, and nothing of the stale
// one is written.
func TestCompletionsReadTasksThatMovedOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	ss := stores(t, 2, func() time.Time { return time.Unix(0, now.Load()) })
	s, other := ss[0], ss[1]
	runs := []store.NewRun{
		newRun("w", "acme", step("a"), step("b", "a")),
		newRun("w", "acme", step("a"), step("b", "a")),
		newRun("w", "acme", step("a"), step("b", "a")),
	}
	require.NoError(t, s.CreateRuns(ctx, runs))
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w1", Limit: 10, Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	byRun := map[[16]byte]store.ClaimedTask{}
	for _, c := range claimed {
		byRun[c.RunID] = c
	}

	// Run 1 is cancelled; run 2's task is rescued once its lease expired,
	// and claimed again by another worker.
	_, err = other.CancelRun(ctx, runs[1].ID)
	require.NoError(t, err)
	now.Add(int64(time.Minute))
	_, err = other.RescueExpired(ctx, 10)
	require.NoError(t, err)
	again, err := other.ClaimTasks(ctx, store.ClaimParams{Worker: "w2", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, again, 2, "runs 0 and 2: run 1 was cancelled")

	late := results([]store.ClaimedTask{byRun[runs[0].ID], byRun[runs[1].ID], byRun[runs[2].ID]}, completed)
	outs, err := s.CompleteTasks(ctx, late)
	require.NoError(t, err)
	for i, o := range outs {
		require.Equal(t, store.OutcomeStale, o.Outcome, "result %d", i)
	}
	// The new attempts complete, and their runs go on.
	for _, c := range again {
		require.Equal(t, 2, c.Attempt)
	}
	outs, err = other.CompleteTasks(ctx, results(again, completed))
	require.NoError(t, err)
	for i, o := range outs {
		require.Equal(t, store.OutcomeCompleted, o.Outcome, "result %d", i)
		require.Equal(t, 1, o.Enqueued, "result %d: b is queued", i)
	}
	tasks, err := s.ListTasks(ctx, runs[1].ID)
	require.NoError(t, err)
	require.Equal(t, store.TaskCancelled, tasks[0].Status, "the cancelled run's task keeps its status")

	// One stale result among applied ones: the batch is decided again on
	// the rows it reads, and the others are applied.
	next, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w1", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, next, 2)
	_, err = other.CancelRun(ctx, next[0].RunID)
	require.NoError(t, err)
	outs, err = s.CompleteTasks(ctx, results(next, completed))
	require.NoError(t, err)
	require.Equal(t, store.OutcomeStale, outs[0].Outcome)
	require.Equal(t, store.OutcomeCompleted, outs[1].Outcome)
	require.Equal(t, store.RunCompleted, outs[1].RunStatus)
	got, err := s.GetRun(ctx, next[0].RunID)
	require.NoError(t, err)
	require.Equal(t, store.RunCancelled, got.Status)
}

// results makes a result of each task.
func results(tasks []store.ClaimedTask, of func(store.ClaimedTask) store.TaskResult) []store.TaskResult {
	out := make([]store.TaskResult, len(tasks))
	for i, c := range tasks {
		out[i] = of(c)
	}
	return out
}
