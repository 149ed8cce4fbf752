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
	l.Claimed(Lease{ID: 10}, []store.ClaimedTask{task(r1, 1), task(r2, 1)}, nil)
	l.Claimed(Lease{ID: 20}, []store.ClaimedTask{task(r3, 1)}, nil)

	l.Answered([]store.TaskResult{answer(r1, 1), answer(r1, 2), answer(dag.RunID{9}, 1)})
	require.Empty(t, l.TakeDone(), "r2 still runs under lease 10; r1's attempt 2 and run 9 were never claimed here")
	l.Answered([]store.TaskResult{answer(r2, 1), answer(r2, 1)})
	require.Equal(t, []Lease{{ID: 10}}, l.TakeDone())
	require.Empty(t, l.TakeDone(), "taken once")

	l.Claimed(Lease{ID: 30}, []store.ClaimedTask{task(r3, 1)}, nil) // r3's claim again, under lease 30
	require.Equal(t, []Lease{{ID: 20}}, l.TakeDone(), "lease 20 lost its one attempt")
	l.Answered([]store.TaskResult{answer(r3, 1)})
	require.Equal(t, []Lease{{ID: 30}}, l.TakeDone())
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
	l.Claimed(Lease{ID: 11}, tasks, views)
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
	l.Claimed(Lease{ID: 20}, tasks[1:2], nil) // r2's attempt claimed again, keeping no view
	require.Nil(t, l.ViewsFor([]store.TaskResult{{RunID: r2, Step: "a", Attempt: 1, Outcome: store.OutcomeCompleted}}))
	l.Answered([]store.TaskResult{{RunID: r2, Step: "a", Attempt: 1}, {RunID: r3, Step: "m", Attempt: 1}})
	require.Empty(t, l.attempts)
}

// TestLeaseBookAfterARollback: a database restored to an older history
// hands out a task's attempt number, and its lease's id, again, to a new
// claim (another token). The lost claim's answer neither answers the new
// attempt nor gets its view, and the lost claim's lease is queued by its
// token, which the new lease does not have.
func TestLeaseBookAfterARollback(t *testing.T) {
	var l Book
	r := dag.RunID{1}
	lost := []store.ClaimedTask{{RunID: r, Step: "a", Attempt: 1, Kind: store.KindStep, Claim: 7}}
	again := []store.ClaimedTask{{RunID: r, Step: "a", Attempt: 1, Kind: store.KindStep, Claim: 9}}
	l.Claimed(LeaseOf(11, lost), lost, []View{{Kind: store.KindStep, StartedEvent: 11, Claim: 7}})
	l.Claimed(LeaseOf(11, again), again, []View{{Kind: store.KindStep, StartedEvent: 11, Claim: 9}})
	require.Equal(t, []Lease{{ID: 11, Token: 7}}, l.TakeDone(), "the lost claim's lease, by its token")

	late := store.TaskResult{RunID: r, Step: "a", Attempt: 1, Claim: 7, Outcome: store.OutcomeCompleted}
	require.Nil(t, l.ViewsFor([]store.TaskResult{late}), "the new claim's view is not the lost claim's")
	l.Answered([]store.TaskResult{late})
	require.Empty(t, l.TakeDone(), "the lost claim's answer does not end the new claim's lease")
	res := late
	res.Claim = 9
	views := l.ViewsFor([]store.TaskResult{res})
	require.True(t, Decides(views, 0))
	l.Answered([]store.TaskResult{res})
	require.Equal(t, []Lease{{ID: 11, Token: 9}}, l.TakeDone())
}
