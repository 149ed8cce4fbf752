package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// The tests of concurrency caps (NewRun.Concurrency) and run deadlines
// (NewRun.Timeout).
var flowTests = []struct {
	name string
	fn   func(f *fixture)
}{
	{"CapQueuesAndAdmitsInOrder", testCapQueuesAndAdmits},
	{"CapAdmitsWhenARunFailsOrIsCancelled", testCapAdmitsOnFailAndCancel},
	{"CapOfManyInOneCall", testCapMany},
	{"CapRaised", testCapRaised},
	{"CapKeyedDuplicateTakesNoRoom", testCapKeyedDuplicate},
	{"CapRetryWaitsForRoom", testCapRetry},
	{"DeadlineFailsRunningRun", testDeadlineRunning},
	{"DeadlineHitsBackoff", testDeadlineBackoff},
	{"DeadlineHitsSleep", testDeadlineSleep},
	{"DeadlineFailsQueuedRun", testDeadlineQueued},
	{"DeadlineGoesWithCompletion", testDeadlineCompleted},
	{"DeadlineCountsAgainFromRetry", testDeadlineRetry},
}

// capped is a one-task run of workflow wf under a cap of n per key.
func capped(key string, n int) store.NewRun {
	r := newRun("wf", "t", task("a"))
	r.Concurrency, r.ConcurrencyKey = n, key
	return r
}

// statuses returns the runs' statuses, in order.
func (f *fixture) statuses(runs ...store.NewRun) []store.RunStatus {
	f.t.Helper()
	out := make([]store.RunStatus, len(runs))
	for i, r := range runs {
		out[i] = f.run(r.ID).Status
	}
	return out
}

const (
	queued  = store.RunQueued
	running = store.RunRunning
)

func testCapQueuesAndAdmits(f *fixture) {
	t := f.t
	r1, r2, r3 := capped("c1", 1), capped("c1", 1), capped("c1", 1)
	for _, r := range []store.NewRun{r1, r2, r3} {
		f.create(r) // one call each: r1's id is the lowest
	}
	require.Equal(t, []store.RunStatus{running, queued, queued}, f.statuses(r1, r2, r3))
	require.Equal(t, "c1", f.run(r2.ID).ConcurrencyKey)
	require.Equal(t, store.TaskPending, f.status(r2.ID, "a"), "a QUEUED run's roots wait")
	require.False(t, f.run(r2.ID).Status.Terminal())

	other := capped("c2", 1)
	f.create(other)
	require.Equal(t, running, f.run(other.ID).Status, "another key has room of its own")

	claimed := f.claim(10)
	require.Len(t, claimed, 2, "only the admitted runs' roots are queued")
	byRun := map[dag.RunID]store.ClaimedTask{}
	for _, c := range claimed {
		byRun[c.RunID] = c
	}
	require.Contains(t, byRun, r1.ID)
	require.Contains(t, byRun, other.ID)

	outs := f.complete(done(byRun[r1.ID], ""))
	require.Equal(t, store.RunCompleted, outs[0].RunStatus)
	require.Equal(t, []store.RunStatus{store.RunCompleted, running, queued}, f.statuses(r1, r2, r3), "r2 is admitted first")
	next := f.claimOne()
	require.Equal(t, r2.ID, next.RunID)

	// A QUEUED run that is cancelled gives up its place.
	ok, err := f.st.CancelRun(f.ctx, r3.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, store.TaskCancelled, f.status(r3.ID, "a"))
	f.complete(done(next, ""))
	require.Empty(t, f.claim(10), "no run waits")

	r4 := capped("c1", 1)
	f.create(r4)
	require.Equal(t, running, f.run(r4.ID).Status, "the slot is free again")
}

func testCapAdmitsOnFailAndCancel(f *fixture) {
	t := f.t
	r1, r2, r3 := capped("k", 1), capped("k", 1), capped("k", 1)
	f.create(r1)
	f.create(r2)
	f.create(r3)
	a := f.claimOne()
	require.Equal(t, r1.ID, a.RunID)
	f.complete(store.TaskResult{RunID: r1.ID, Step: "a", Attempt: a.Attempt, Claim: a.Claim, Outcome: store.OutcomeFailed, Error: "boom"})
	require.Equal(t, []store.RunStatus{store.RunFailed, running, queued}, f.statuses(r1, r2, r3))

	ok, err := f.st.CancelRun(f.ctx, r2.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []store.RunStatus{store.RunCancelled, running}, f.statuses(r2, r3))
	require.Equal(t, r3.ID, f.claimOne().RunID, "r2's queued root went with it; r3's is queued")
}

func testCapMany(f *fixture) {
	t := f.t
	runs := make([]store.NewRun, 5)
	for i := range runs {
		runs[i] = capped("", 2) // a cap on the whole workflow
	}
	f.create(runs...)
	got := f.statuses(runs...)
	n := 0
	for _, s := range got {
		if s == running {
			n++
		}
	}
	require.Equal(t, 2, n, "two of five admitted: %v", got)
	first := f.claim(10)
	require.Len(t, first, 2)
	f.complete(done(first[0], ""), done(first[1], ""))
	second := f.claim(10)
	require.Len(t, second, 2, "two more admitted by the completions")
	f.complete(done(second[0], ""), done(second[1], ""))
	last := f.claim(10)
	require.Len(t, last, 1)
	f.complete(done(last[0], ""))
	for _, s := range f.statuses(runs...) {
		require.Equal(t, store.RunCompleted, s)
	}
}

func testCapRaised(f *fixture) {
	t := f.t
	r1, r2, r3 := capped("k", 1), capped("k", 1), capped("k", 1)
	f.create(r1)
	f.create(r2)
	f.create(r3)
	r4 := capped("k", 3) // a deploy raised the cap
	f.create(r4)
	require.Equal(t, []store.RunStatus{running, running, running, queued}, f.statuses(r1, r2, r3, r4),
		"the runs waiting first take the new room, in order")
	require.Len(t, f.claim(10), 3)
}

func testCapKeyedDuplicate(f *fixture) {
	t := f.t
	r1 := capped("k", 1)
	r1.Key = "order-1"
	f.create(r1)
	dup := capped("k", 1)
	dup.Key = "order-1"
	dup = f.createOne(dup)
	require.Equal(t, r1.ID, dup.Existing)
	f.complete(done(f.claimOne(), ""))
	r2 := capped("k", 1)
	f.create(r2)
	require.Equal(t, running, f.run(r2.ID).Status, "the duplicate took no room")
}

func testCapRetry(f *fixture) {
	t := f.t
	r1, r2 := capped("k", 1), capped("k", 1)
	f.create(r1)
	f.create(r2)
	a := f.claimOne()
	f.complete(store.TaskResult{RunID: r1.ID, Step: "a", Attempt: a.Attempt, Claim: a.Claim, Outcome: store.OutcomeFailed, Error: "boom"})
	b := f.claimOne()
	require.Equal(t, r2.ID, b.RunID)

	_, err := f.st.RetryRun(f.ctx, r1.ID, store.Retry{Mode: store.RetryFailed})
	require.NoError(t, err)
	require.Equal(t, queued, f.run(r1.ID).Status, "a retried run waits for room like a new one")
	require.Empty(t, f.claim(10))

	f.complete(done(b, ""))
	require.Equal(t, running, f.run(r1.ID).Status)
	again := f.claimOne()
	require.Equal(t, r1.ID, again.RunID)
	require.Equal(t, 2, again.Attempt)
	f.complete(done(again, ""))
	require.Equal(t, store.RunCompleted, f.run(r1.ID).Status)
}

// timed is a run of a then b with an onfailure task and a timeout of d.
func timed(d time.Duration) store.NewRun {
	onFailure := store.NewTask{Name: "@onfailure", Kind: store.KindOnFailure, MaxAttempts: 1}
	r := newRun("wf", "t", task("a"), task("b", "a"), onFailure)
	r.Timeout = d
	return r
}

// fireDue advances the clock by d and fires what is due.
func (f *fixture) fireDue(d time.Duration) int {
	f.t.Helper()
	f.clock.advance(d)
	n, err := f.st.FireTimers(f.ctx, 100)
	require.NoError(f.t, err)
	return n
}

// requireTimedOut checks that run id failed at its deadline with
// "timed out after 48h", and that its onfailure task, queued, is claimed
// with that failure.
func (f *fixture) requireTimedOut(id dag.RunID) {
	t := f.t
	t.Helper()
	run := f.run(id)
	require.Equal(t, store.RunFailed, run.Status)
	require.Equal(t, &dag.Failure{RunID: id, Step: store.DeadlineStep, Message: "timed out after 48h"}, run.Failure)
	require.True(t, run.Failure.TimedOut())
	require.Equal(t, "run timed out after 48h", run.Failure.Error())
	of := f.claimOne()
	require.Equal(t, "@onfailure", of.Step)
	require.Equal(t, run.Failure, of.Failure)
	require.Empty(t, f.claim(10), "nothing else is queued")
	evs, err := f.st.ListEvents(f.ctx, id)
	require.NoError(t, err)
	found := false
	for _, e := range evs {
		if e.Step == store.DeadlineStep {
			require.Equal(t, store.EventFailed, e.Type)
			require.Equal(t, "timed out after 48h", e.Detail)
			found = true
		}
	}
	require.True(t, found, "the deadline's FAILED event is logged")
}

func testDeadlineRunning(f *fixture) {
	t := f.t
	r := timed(48 * time.Hour)
	f.create(r)
	require.Equal(t, epoch.Add(48*time.Hour), f.run(r.ID).Deadline.UTC())
	a := f.claimOne()
	require.Zero(t, f.fireDue(47*time.Hour))
	require.Equal(t, 1, f.fireDue(time.Hour))
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "a"), "a running task is cancelled too")
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "b"))
	stop, err := f.st.Heartbeat(f.ctx, "w1", time.Minute, []store.HeldAttempt{store.HeldOf(&a)})
	require.NoError(t, err)
	require.Equal(t, []dag.RunID{r.ID}, stop, "the worker running a is told to stop it")
	outs := f.complete(done(a, ""))
	require.Equal(t, store.OutcomeStale, outs[0].Outcome, "a's late result changes nothing")
	f.requireTimedOut(r.ID)
}

func testDeadlineBackoff(f *fixture) {
	t := f.t
	r := timed(48 * time.Hour)
	f.create(r)
	a := f.claimOne()
	f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: a.Attempt, Claim: a.Claim, Outcome: store.OutcomeRetry, Error: "flaky", Delay: 72 * time.Hour})
	require.Equal(t, store.TaskBackoff, f.status(r.ID, "a"))
	require.Equal(t, 1, f.fireDue(48*time.Hour), "the deadline fires before the retry")
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "a"))
	f.requireTimedOut(r.ID)
	require.Zero(t, f.fireDue(24*time.Hour), "the retry's timer went with the run")
	require.Empty(t, f.claim(10))
}

func testDeadlineSleep(f *fixture) {
	t := f.t
	onFailure := store.NewTask{Name: "@onfailure", Kind: store.KindOnFailure, MaxAttempts: 1}
	r := newRun("wf", "t", store.NewTask{Name: "nap", Kind: store.KindSleep, MaxAttempts: 1}, task("b", "nap"), onFailure)
	r.Timeout = 48 * time.Hour
	f.create(r)
	nap := f.claimOne()
	f.complete(store.TaskResult{RunID: r.ID, Step: "nap", Attempt: nap.Attempt, Claim: nap.Claim, Outcome: store.OutcomeSleep, Delay: 100 * time.Hour})
	require.Equal(t, store.TaskSleeping, f.status(r.ID, "nap"))
	next, ok, err := f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, epoch.Add(48*time.Hour), next.UTC(), "the deadline is the next timer")
	require.Equal(t, 1, f.fireDue(48*time.Hour))
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "nap"))
	f.requireTimedOut(r.ID)
	require.Zero(t, f.fireDue(100*time.Hour))
}

func testDeadlineQueued(f *fixture) {
	t := f.t
	holder := capped("k", 1)
	f.create(holder)
	waiting := timed(48 * time.Hour)
	waiting.Concurrency, waiting.ConcurrencyKey = 1, "k"
	f.create(waiting)
	require.Equal(t, queued, f.run(waiting.ID).Status)
	h := f.claimOne()
	require.Equal(t, 1, f.fireDue(48*time.Hour))
	f.requireTimedOut(waiting.ID)
	f.complete(done(h, ""))
	require.Empty(t, f.claim(10), "the timed-out run is not admitted")
	r := capped("k", 1)
	f.create(r)
	require.Equal(t, running, f.run(r.ID).Status, "and holds no room")
}

func testDeadlineCompleted(f *fixture) {
	t := f.t
	r := timed(time.Hour)
	f.create(r)
	f.complete(done(f.claimOne(), ""))
	f.complete(done(f.claimOne(), ""))
	require.Equal(t, store.RunCompleted, f.run(r.ID).Status)
	_, ok, err := f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.False(t, ok, "a completed run's deadline is no timer")
	require.Zero(t, f.fireDue(2*time.Hour))
	require.Equal(t, store.RunCompleted, f.run(r.ID).Status)
}

func testDeadlineRetry(f *fixture) {
	t := f.t
	r := timed(48 * time.Hour)
	f.create(r)
	f.claimOne()
	f.fireDue(48 * time.Hour)
	f.requireTimedOut(r.ID)

	f.clock.advance(time.Hour)
	_, err := f.st.RetryRun(f.ctx, r.ID, store.Retry{Mode: store.RetryFailed})
	require.NoError(t, err)
	run := f.run(r.ID)
	require.Equal(t, running, run.Status)
	require.Equal(t, epoch.Add(97*time.Hour), run.Deadline.UTC(), "48h from the retry")
	a := f.claimOne()
	require.Equal(t, "a", a.Step)
	require.Zero(t, f.fireDue(47*time.Hour))
	require.Equal(t, 1, f.fireDue(time.Hour))
	require.Equal(t, store.RunFailed, f.run(r.ID).Status)
}
