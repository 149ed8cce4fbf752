package pgstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestMapWithoutLimitQueuesAWindow: a map without limit=, of more elements
// than the store's window (10,000), queues the window at once and the rest
// as elements resolve.
func TestMapWithoutLimitQueuesAWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stores(t, 1, nil)[0]
	r := newRun("wf", "t", step("list"),
		store.NewTask{Name: "sq", Kind: store.KindMap, Parents: []string{"list"}, MaxAttempts: 1, Signature: "wf"})
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
	claim := func(n int) []store.ClaimedTask {
		cts, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: n, Lease: time.Hour})
		require.NoError(t, err)
		return cts
	}
	list := claim(1)[0]
	_, err := s.CompleteTasks(ctx, []store.TaskResult{completed(list)})
	require.NoError(t, err)
	sq := claim(1)[0]
	const n = 10_050
	items := make([][]byte, n)
	for i := range items {
		items[i] = []byte(strconv.Itoa(i))
	}
	outs, err := s.CompleteTasks(ctx, []store.TaskResult{{RunID: r.ID, Step: "sq", Attempt: sq.Attempt, Claim: sq.Claim, Outcome: store.OutcomeMapped, Elements: items, Each: "list"}})
	require.NoError(t, err)
	require.Equal(t, 10_000, outs[0].Enqueued)
	count := func() map[store.TaskStatus]int {
		tasks, err := s.ListTasks(ctx, r.ID)
		require.NoError(t, err)
		m := map[store.TaskStatus]int{}
		for _, tk := range tasks {
			if tk.Kind == store.KindElement {
				m[tk.Status]++
			}
		}
		return m
	}
	require.Equal(t, map[store.TaskStatus]int{store.TaskQueued: 10_000, store.TaskPending: 50}, count())
	first := claim(3)
	outs, err = s.CompleteTasks(ctx, []store.TaskResult{completed(first[0]), completed(first[1])})
	require.NoError(t, err)
	require.Equal(t, []int{1, 1}, []int{outs[0].Enqueued, outs[1].Enqueued}, "each resolved element queues one more")
	require.Equal(t, map[store.TaskStatus]int{store.TaskQueued: 9_999, store.TaskPending: 48, store.TaskRunning: 1, store.TaskCompleted: 2}, count())
}

// TestElementsQueuedByKeyAcrossRanges: two runs of the same shape in two
// ranges (partitions) of the history tables, written in the same order,
// have their tasks at the same row positions (ctids) in their ranges. The
// next element a resolved element queues is the one of its own run: a
// position alone names a row in every range.
func TestElementsQueuedByKeyAcrossRanges(t *testing.T) {
	f := newPartitionFixture(t)
	newMapRun := func(at time.Time) store.NewRun {
		r := newRun("wf", "t", step("list"),
			store.NewTask{Name: "sq", Kind: store.KindMap, Parents: []string{"list"}, MaxAttempts: 1, Signature: "wf"})
		r.ID = runIDAt(at)
		return r
	}
	a, b := newMapRun(f.t0), newMapRun(f.t0.Add(time.Minute))
	require.NoError(t, f.s.CreateRuns(f.ctx, []store.NewRun{a}))
	require.NoError(t, f.s.CreateRuns(f.ctx, []store.NewRun{b}))
	require.NotEqual(t, f.partitionOf(a.ID), f.partitionOf(b.ID))
	claim := func(n int) []store.ClaimedTask {
		cts, err := f.s.ClaimTasks(f.ctx, store.ClaimParams{Worker: "w", Limit: n, Lease: time.Hour})
		require.NoError(t, err)
		require.Len(t, cts, n)
		return cts
	}
	complete := func(results ...store.TaskResult) {
		_, err := f.s.CompleteTasks(f.ctx, results)
		require.NoError(t, err)
	}
	lists := claim(2)
	complete(completed(lists[0]), completed(lists[1]))
	var results []store.TaskResult
	for _, sq := range claim(2) {
		results = append(results, store.TaskResult{RunID: sq.RunID, Step: "sq", Attempt: sq.Attempt, Claim: sq.Claim, Outcome: store.OutcomeMapped,
			Elements: [][]byte{[]byte("0"), []byte("1"), []byte("2")}, Each: "list", Limit: 1})
	}
	complete(results...)
	first := claim(2) // element 0 of each
	for _, e := range first {
		if e.RunID == a.ID {
			complete(completed(e)) // queues a's element 1
		}
	}
	statuses := func(id dag.RunID) map[string]store.TaskStatus {
		tasks, err := f.s.ListTasks(f.ctx, id)
		require.NoError(t, err)
		m := map[string]store.TaskStatus{}
		for _, tk := range tasks {
			if tk.Kind == store.KindElement {
				m[tk.Name] = tk.Status
			}
		}
		return m
	}
	el := func(i int) string { return store.ElementName("sq", i) }
	require.Equal(t, map[string]store.TaskStatus{el(0): store.TaskCompleted, el(1): store.TaskQueued, el(2): store.TaskPending}, statuses(a.ID))
	require.Equal(t, map[string]store.TaskStatus{el(0): store.TaskRunning, el(1): store.TaskPending, el(2): store.TaskPending}, statuses(b.ID),
		"b's element 1, at the same position in its range as a's, stays pending")
}
