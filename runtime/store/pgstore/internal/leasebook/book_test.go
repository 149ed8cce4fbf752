package leasebook

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestLeaseBookQueuesALeaseOnceEveryAttemptIsAnswered covers the book's
// counting: a lease is queued after the last answer to its attempts, once;
// answers it never recorded change nothing; an attempt claimed again (the
// claim of a creation tried again) moves to the new lease.
func TestLeaseBookQueuesALeaseOnceEveryAttemptIsAnswered(t *testing.T) {
	var l Book
	r1, r2, r3 := dag.RunID{1}, dag.RunID{2}, dag.RunID{3}
	task := func(r dag.RunID, attempt int) store.ClaimedTask {
		return store.ClaimedTask{RunID: r, Step: "a", Attempt: attempt}
	}
	answer := func(r dag.RunID, attempt int) store.TaskResult {
		return store.TaskResult{RunID: r, Step: "a", Attempt: attempt, Outcome: store.OutcomeCompleted}
	}
	l.Claimed(10, []store.ClaimedTask{task(r1, 1), task(r2, 1)}, nil)
	l.Claimed(20, []store.ClaimedTask{task(r3, 1)}, nil)

	l.Answered([]store.TaskResult{answer(r1, 1), answer(r1, 2), answer(dag.RunID{9}, 1)})
	require.Empty(t, l.TakeDone(), "r2 still runs under lease 10; r1's attempt 2 and run 9 were never claimed here")
	l.Answered([]store.TaskResult{answer(r2, 1), answer(r2, 1)})
	require.Equal(t, []int64{10}, l.TakeDone())
	require.Empty(t, l.TakeDone(), "taken once")

	l.Claimed(30, []store.ClaimedTask{task(r3, 1)}, nil) // r3's claim again, under lease 30
	require.Equal(t, []int64{20}, l.TakeDone(), "lease 20 lost its one attempt")
	l.Answered([]store.TaskResult{answer(r3, 1)})
	require.Equal(t, []int64{30}, l.TakeDone())
	require.Empty(t, l.attempts)
	require.Empty(t, l.left)
}

// TestLeaseBookKeepsViewsUntilAnswered: a claim view is offered for a
// completed result of a step's attempt it was kept for, not for another
// attempt, outcome or kind, and is forgotten once the attempt is answered
// or claimed again without one.
func TestLeaseBookKeepsViewsUntilAnswered(t *testing.T) {
	var l Book
	r1, r2, r3 := dag.RunID{1}, dag.RunID{2}, dag.RunID{3}
	tasks := []store.ClaimedTask{
		{RunID: r1, Step: "a", Attempt: 1, Kind: store.KindStep},
		{RunID: r2, Step: "a", Attempt: 1, Kind: store.KindStep},
		{RunID: r3, Step: "m", Attempt: 1, Kind: store.KindMap},
	}
	views := []View{
		{Kind: store.KindStep, StartedEvent: 11, Children: []string{"b"}},
		{Kind: store.KindStep, StartedEvent: 12},
		{Kind: store.KindMap, StartedEvent: 13},
	}
	l.Claimed(11, tasks, views)
	results := []store.TaskResult{
		{RunID: r1, Step: "a", Attempt: 1, Outcome: store.OutcomeCompleted},
		{RunID: r1, Step: "a", Attempt: 2, Outcome: store.OutcomeCompleted}, // another attempt
		{RunID: r2, Step: "a", Attempt: 1, Outcome: store.OutcomeRetry},     // not a completion
		{RunID: r3, Step: "m", Attempt: 1, Outcome: store.OutcomeCompleted}, // not a step
	}
	got := l.ViewsFor(results)
	require.Len(t, got, len(results))
	require.True(t, Decides(got, 0))
	require.Equal(t, int64(11), got[0].StartedEvent)
	require.Equal(t, []string{"b"}, got[0].Children)
	require.Zero(t, got[1])
	require.Zero(t, got[2])
	require.Zero(t, got[3])
	for i := 1; i < len(results); i++ {
		require.False(t, Decides(got, i))
	}

	l.Answered(results[:1])
	require.Nil(t, l.ViewsFor(results[:1]), "answered: its view is gone")
	l.Claimed(20, tasks[1:2], nil) // r2's attempt claimed again, keeping no view
	require.Nil(t, l.ViewsFor([]store.TaskResult{{RunID: r2, Step: "a", Attempt: 1, Outcome: store.OutcomeCompleted}}))
	l.Answered([]store.TaskResult{{RunID: r2, Step: "a", Attempt: 1}, {RunID: r3, Step: "m", Attempt: 1}})
	require.Empty(t, l.attempts)
}
