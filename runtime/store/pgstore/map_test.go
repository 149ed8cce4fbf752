package pgstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
	outs, err := s.CompleteTasks(ctx, []store.TaskResult{{RunID: r.ID, Step: "sq", Attempt: sq.Attempt, Outcome: store.OutcomeMapped, Elements: items, Each: "list"}})
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
