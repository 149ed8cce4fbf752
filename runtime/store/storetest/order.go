package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// step is one entry of a run's event log as the order tests compare it.
type step struct {
	Step    string
	Type    store.EventType
	Attempt int
}

// eventLog returns a run's event log, oldest first, without times and
// details.
func (f *fixture) eventLog(id dag.RunID) []step {
	f.t.Helper()
	events, err := f.st.ListEvents(f.ctx, id)
	require.NoError(f.t, err)
	log := make([]step, len(events))
	for i, e := range events {
		log[i] = step{e.Step, e.Type, e.Attempt}
	}
	return log
}

// claimAll claims every ready task, by run and step.
func (f *fixture) claimAll() map[dag.RunID]map[string]store.ClaimedTask {
	f.t.Helper()
	m := make(map[dag.RunID]map[string]store.ClaimedTask)
	for _, ct := range f.claim(1000) {
		if m[ct.RunID] == nil {
			m[ct.RunID] = make(map[string]store.ClaimedTask)
		}
		m[ct.RunID][ct.Step] = ct
	}
	return m
}

func result(ct store.ClaimedTask, outcome store.Outcome) store.TaskResult {
	return store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: outcome}
}

var onFailureTask = store.NewTask{Name: "@onfailure", Kind: store.KindOnFailure, MaxAttempts: 1}

func sleepTask(name string, parents ...string) store.NewTask {
	return store.NewTask{Name: name, Kind: store.KindSleep, Parents: parents, MaxAttempts: 1}
}

// testEventOrderSiblings completes siblings of one run in one batch, in
// an order of its own: their COMPLETED events come in the order of the
// results, and so do the QUEUED events of the children they make ready,
// the same on every store.
func testEventOrderSiblings(f *fixture) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b"), task("c"), task("d", "a"), task("e", "b"), task("g", "c"), task("j", "a", "b", "c"))
	f.create(r)
	ready := f.claimAll()[r.ID]
	f.complete(
		result(ready["c"], store.OutcomeCompleted),
		result(ready["a"], store.OutcomeCompleted),
		result(ready["b"], store.OutcomeCompleted),
	)
	require.Equal(t, []step{
		{"a", store.EventQueued, 0}, {"b", store.EventQueued, 0}, {"c", store.EventQueued, 0},
		{"a", store.EventStarted, 1}, {"b", store.EventStarted, 1}, {"c", store.EventStarted, 1},
		{"c", store.EventCompleted, 1}, {"a", store.EventCompleted, 1}, {"b", store.EventCompleted, 1},
		{"g", store.EventQueued, 0}, {"d", store.EventQueued, 0}, {"e", store.EventQueued, 0}, {"j", store.EventQueued, 0},
	}, f.eventLog(r.ID), "the results' COMPLETED in result order, then the children they made ready, in that order")
}

// testEventOrderCompleteBatch completes results of every outcome in one
// CompleteTasks call and checks each run's event log: a task's event comes
// before the events it causes (its child's QUEUED; for a failure, the
// CANCELLED events of the run's waiting tasks, in task order, then the
// onfailure task's QUEUED), the same on every store.
func testEventOrderCompleteBatch(f *fixture) {
	t := f.t
	completed := newRun("wf", "t", task("a"), task("b", "a"))
	skipped := newRun("wf", "t", task("a"), task("b", "a"))
	failed := newRun("wf", "t", sleepTask("z"), task("a"), task("c", "a"), task("d", "a"), task("e", "c"), onFailureTask)
	retried := newRun("wf", "t", task("a"), task("b", "a"))
	slept := newRun("wf", "t", sleepTask("nap"), task("b", "nap"))
	joined := newRun("wf", "t", task("x"), task("y"), task("j", "x", "y"))
	f.create(completed, skipped, failed, retried, slept, joined)
	ready := f.claimAll()
	skip := result(ready[skipped.ID]["a"], store.OutcomeSkipped)
	skip.Reason = "skip=p"
	fail := result(ready[failed.ID]["a"], store.OutcomeFailed)
	fail.Error = "card declined"
	retry := result(ready[retried.ID]["a"], store.OutcomeRetry)
	retry.Error, retry.Delay = "flaky", time.Second
	sleep := result(ready[slept.ID]["nap"], store.OutcomeSleep)
	sleep.Delay = time.Hour
	skipY := result(ready[joined.ID]["y"], store.OutcomeSkipped)
	skipY.Reason = "skip=p"
	// Before the batch, the failed run's first task goes to sleep: it is
	// first of the tasks the failure cancels.
	nap := result(ready[failed.ID]["z"], store.OutcomeSleep)
	nap.Delay = time.Hour
	f.complete(nap)
	outs := f.complete(
		skip, fail, retry, sleep,
		skipY,
		result(ready[joined.ID]["x"], store.OutcomeCompleted),
		result(ready[completed.ID]["a"], store.OutcomeCompleted),
	)
	for i, o := range outs {
		require.NotEqual(t, store.OutcomeStale, o.Outcome, "result %d", i)
	}

	require.Equal(t, []step{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"a", store.EventCompleted, 1},
		{"b", store.EventQueued, 0},
	}, f.eventLog(completed.ID))
	require.Equal(t, []step{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"a", store.EventSkipped, 1},
		{"b", store.EventQueued, 0},
	}, f.eventLog(skipped.ID), "the parent's SKIPPED, then the child's QUEUED")
	require.Equal(t, []step{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"a", store.EventRetrying, 1},
	}, f.eventLog(retried.ID))
	log := f.eventLog(failed.ID)
	require.Len(t, log, 11)
	require.Equal(t, []step{
		{"z", store.EventQueued, 0}, {"a", store.EventQueued, 0}, {"z", store.EventStarted, 1}, {"a", store.EventStarted, 1},
	}, log[:4], "the roots queued in task order, then claimed in queue order")
	require.Equal(t, []step{
		{"z", store.EventSleeping, 1}, {"a", store.EventFailed, 1},
		{"z", store.EventCancelled, 1}, {"c", store.EventCancelled, 0}, {"d", store.EventCancelled, 0}, {"e", store.EventCancelled, 0},
		{"@onfailure", store.EventQueued, 0},
	}, log[4:], "the failure, the tasks it cancelled in task order, then the onfailure task")
	require.Equal(t, []step{
		{"nap", store.EventQueued, 0}, {"nap", store.EventStarted, 1}, {"nap", store.EventSleeping, 1},
	}, f.eventLog(slept.ID))
	// Two parents of one child resolved in one batch: the COMPLETED of a
	// task's own result comes first, then the batch's other events, then
	// the child's QUEUED.
	require.Equal(t, []step{
		{"x", store.EventQueued, 0}, {"y", store.EventQueued, 0}, {"x", store.EventStarted, 1}, {"y", store.EventStarted, 1},
		{"x", store.EventCompleted, 1}, {"y", store.EventSkipped, 1},
		{"j", store.EventQueued, 0},
	}, f.eventLog(joined.ID))

	// The retry and the children run to the end, in one more batch.
	f.clock.advance(time.Second)
	fired, err := f.st.FireTimers(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, fired, "the retry's timer; the sleep's is not due")
	ready = f.claimAll()
	var results []store.TaskResult
	for _, id := range []dag.RunID{completed.ID, skipped.ID, retried.ID, joined.ID, failed.ID} {
		for _, ct := range ready[id] {
			results = append(results, result(ct, store.OutcomeCompleted))
		}
	}
	require.Len(t, results, 5, "b, b, a again, j and the onfailure task")
	f.complete(results...)
	require.Equal(t, []step{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"a", store.EventRetrying, 1},
		{"a", store.EventQueued, 1}, {"a", store.EventStarted, 2}, {"a", store.EventCompleted, 2},
		{"b", store.EventQueued, 0},
	}, f.eventLog(retried.ID))
	require.Equal(t, []step{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"a", store.EventSkipped, 1},
		{"b", store.EventQueued, 0}, {"b", store.EventStarted, 1}, {"b", store.EventCompleted, 1},
	}, f.eventLog(skipped.ID))
	require.Equal(t, []step{
		{"@onfailure", store.EventQueued, 0}, {"@onfailure", store.EventStarted, 1}, {"@onfailure", store.EventCompleted, 1},
	}, f.eventLog(failed.ID)[10:])
}

// testEventOrderTimerBatch fires several timers in one FireTimers call: a
// woken sleep's WOKEN and COMPLETED come before its child's QUEUED, timers
// fire in wake order, and a fired retry is QUEUED again, the same on every
// store.
func testEventOrderTimerBatch(f *fixture) {
	t := f.t
	slept := newRun("wf", "t", sleepTask("nap"), task("b", "nap"))
	naps := newRun("wf", "t", sleepTask("nap1"), sleepTask("nap2"), task("j", "nap1", "nap2"))
	lone := newRun("wf", "t", sleepTask("nap"))
	retried := newRun("wf", "t", task("a"), task("b", "a"))
	f.create(slept, naps, lone, retried)
	ready := f.claimAll()
	sleepUntil := func(ct store.ClaimedTask, wake time.Duration) store.TaskResult {
		r := result(ct, store.OutcomeSleep)
		r.WakeAt = epoch.Add(wake)
		return r
	}
	retry := result(ready[retried.ID]["a"], store.OutcomeRetry)
	retry.Error, retry.WakeAt = "flaky", epoch.Add(1500*time.Millisecond)
	f.complete(
		sleepUntil(ready[naps.ID]["nap2"], 3*time.Second),
		sleepUntil(ready[slept.ID]["nap"], 2*time.Second),
		sleepUntil(ready[naps.ID]["nap1"], time.Second),
		sleepUntil(ready[lone.ID]["nap"], 4*time.Second),
		retry,
	)

	f.clock.advance(5 * time.Second)
	fired, err := f.st.FireTimers(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 5, fired, "every timer, in one call")

	require.Equal(t, []step{
		{"nap", store.EventQueued, 0}, {"nap", store.EventStarted, 1}, {"nap", store.EventSleeping, 1},
		{"nap", store.EventWoken, 1}, {"nap", store.EventCompleted, 1},
		{"b", store.EventQueued, 0},
	}, f.eventLog(slept.ID))
	// The roots were queued and claimed in task order, put to sleep in
	// the order of the results, and woke in wake order.
	log := f.eventLog(naps.ID)
	require.Len(t, log, 11)
	require.Equal(t, []step{
		{"nap1", store.EventQueued, 0}, {"nap2", store.EventQueued, 0},
		{"nap1", store.EventStarted, 1}, {"nap2", store.EventStarted, 1},
		{"nap2", store.EventSleeping, 1}, {"nap1", store.EventSleeping, 1},
	}, log[:6])
	require.Equal(t, []step{
		{"nap1", store.EventWoken, 1}, {"nap1", store.EventCompleted, 1},
		{"nap2", store.EventWoken, 1}, {"nap2", store.EventCompleted, 1},
		{"j", store.EventQueued, 0},
	}, log[6:], "in wake order, then the child of both")
	require.Equal(t, []step{
		{"nap", store.EventQueued, 0}, {"nap", store.EventStarted, 1}, {"nap", store.EventSleeping, 1},
		{"nap", store.EventWoken, 1}, {"nap", store.EventCompleted, 1},
	}, f.eventLog(lone.ID))
	require.Equal(t, store.RunCompleted, f.run(lone.ID).Status)
	require.Equal(t, []step{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"a", store.EventRetrying, 1},
		{"a", store.EventQueued, 1},
	}, f.eventLog(retried.ID))
}

// testEventOrderRescueBatch rescues several expired attempts in one
// RescueExpired call: one is RESCUED and QUEUED again; one without
// attempts left FAILED, then its run's waiting tasks CANCELLED in task
// order, then its onfailure task QUEUED, the same on every store.
func testEventOrderRescueBatch(f *fixture) {
	t := f.t
	rescued := newRun("wf", "t", task("a"), task("b", "a"))
	failed := newRun("wf", "t", store.NewTask{Name: "a", Kind: store.KindStep, MaxAttempts: 1},
		task("c", "a"), task("d", "a"), onFailureTask)
	f.create(rescued, failed)
	require.Len(t, f.claim(10), 2)
	f.clock.advance(2 * time.Minute) // past the leases
	n, err := f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []step{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"a", store.EventRescued, 1},
		{"a", store.EventQueued, 1},
	}, f.eventLog(rescued.ID))
	require.Equal(t, []step{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"a", store.EventFailed, 1},
		{"c", store.EventCancelled, 0}, {"d", store.EventCancelled, 0},
		{"@onfailure", store.EventQueued, 0},
	}, f.eventLog(failed.ID))
}
