package storetest

import (
	"context"
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// workersTests check store.Workers.
var workersTests = []struct {
	name string
	fn   func(f *fixture, ws store.Workers)
}{
	{"HeartbeatKeepsTasks", testHeartbeatKeepsTasks},
	{"HeartbeatReportsCancelledRuns", testHeartbeatReportsCancelledRuns},
	{"RetireWorkerReleasesTasks", testRetireWorker},
	{"ReleasedAttemptDoesNotCount", testReleasedAttemptDoesNotCount},
	{"PruneFinishedRuns", testPruneRuns},
	{"HeartbeatReleasesUnreceivedClaims", testHeartbeatReleasesUnreceivedClaims},
	{"HeartbeatReleasesAttemptsNotHeld", testHeartbeatReleasesAttemptsNotHeld},
}

func testHeartbeatKeepsTasks(f *fixture, ws store.Workers) {
	t := f.t
	r := newRun("wf", "t", task("long"), task("orphan"))
	f.create(r)
	long, err := f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: "alive", Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	orphan, err := f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: "dead", Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, long, 1)
	require.Len(t, orphan, 1)

	// "alive" heartbeats past its claim lease; "dead" never does.
	for range 5 {
		f.clock.advance(30 * time.Second)
		_, err := ws.Heartbeat(f.ctx, "alive", time.Minute, []store.HeldAttempt{store.HeldOf(&long[0])})
		require.NoError(t, err)
		_, err = f.st.RescueExpired(f.ctx, 100)
		require.NoError(t, err)
	}
	tasks := f.tasks(r.ID)
	require.Equal(t, store.TaskRunning, tasks[long[0].Step].Status, "a heartbeating worker keeps its task past the claim lease")
	require.Equal(t, 1, tasks[long[0].Step].Attempt)
	require.Equal(t, store.TaskQueued, tasks[orphan[0].Step].Status, "a silent worker's task is rescued")
	require.Equal(t, store.OutcomeCompleted, f.complete(done(long[0], `1`))[0].Outcome)

	// Once "alive" stops heartbeating, its next task is rescued after the TTL.
	next := f.claimOne()
	require.Equal(t, orphan[0].Step, next.Step)
	f.clock.advance(2 * time.Minute)
	n, err := f.st.RescueExpired(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func testHeartbeatReportsCancelledRuns(f *fixture, ws store.Workers) {
	t := f.t
	keep := newRun("wf", "t", task("a"))
	stop := newRun("wf", "t", task("a"))
	fail := newRun("wf", "t", task("a"), task("b"))
	f.create(keep, stop, fail)
	claimed := f.claim(10)
	require.Len(t, claimed, 4)
	_, err := f.st.CancelRun(f.ctx, stop.ID)
	require.NoError(t, err)
	f.complete(store.TaskResult{RunID: fail.ID, Step: "a", Attempt: 1, Claim: claimOf(claimed, fail.ID, "a"), Outcome: store.OutcomeFailed, Error: "x"})
	gone := dag.NewRunID()
	held := []store.HeldAttempt{{RunID: gone, Step: "a", Attempt: 1, Claim: 1}}
	for i := range claimed {
		held = append(held, store.HeldOf(&claimed[i]))
	}
	cancelled, err := ws.Heartbeat(f.ctx, "w1", time.Minute, held)
	require.NoError(t, err)
	require.ElementsMatch(t, []dag.RunID{stop.ID, gone}, cancelled,
		"cancelled and vanished runs are reported; a failed run's running steps may finish")
}

func testRetireWorker(f *fixture, ws store.Workers) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b"))
	last := newRun("wf", "t", store.NewTask{Name: "a", Kind: store.KindStep, MaxAttempts: 1})
	f.create(r, last)
	_, err := ws.Heartbeat(f.ctx, "w1", time.Hour, nil)
	require.NoError(t, err)
	claimed := f.claim(10)
	require.Len(t, claimed, 3)
	n, err := ws.RetireWorker(f.ctx, "w1", false)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	require.Equal(t, store.TaskRunning, f.status(r.ID, "a"), "retiring without release leaves tasks to their lease")

	n, err = ws.RetireWorker(f.ctx, "w1", true)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, store.TaskQueued, f.status(r.ID, "a"))
	require.Equal(t, store.TaskQueued, f.status(r.ID, "b"))
	require.Equal(t, store.TaskQueued, f.status(last.ID, "a"), "a released task without attempts left is handed back, not failed")
	require.Equal(t, store.RunRunning, f.run(last.ID).Status)
	evs, err := f.st.ListEvents(f.ctx, last.ID)
	require.NoError(t, err)
	released := false
	for _, ev := range evs {
		released = released || (ev.Step == "a" && ev.Type == store.EventRescued && ev.Attempt == 1 && ev.Detail == store.ReleasedDetail)
		require.NotEqual(t, store.EventFailed, ev.Type, "a released attempt is not a failure")
	}
	require.True(t, released, "the release is in the event log, as %q", store.ReleasedDetail)
	again := f.claim(10)
	require.Len(t, again, 3)
	for _, ct := range again {
		require.Equal(t, 2, ct.Attempt)
	}
	for _, ct := range claimed {
		require.Equal(t, store.OutcomeStale, f.complete(done(ct, `0`))[0].Outcome)
	}
}

// testReleasedAttemptDoesNotCount checks that an attempt released by a
// stopping worker leaves the task its whole budget for lost workers.
func testReleasedAttemptDoesNotCount(f *fixture, ws store.Workers) {
	t := f.t
	r := newRun("wf", "t", store.NewTask{Name: "a", Kind: store.KindStep, MaxAttempts: 2})
	f.create(r)
	claim := func(worker string, attempt int) {
		t.Helper()
		got, err := f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: worker, Limit: 10, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, attempt, got[0].Attempt)
	}
	claim("stopping", 1)
	n, err := ws.RetireWorker(f.ctx, "stopping", true)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Two more attempts are lost to workers that vanish: the first is
	// rescued, the second is the last of the task's two.
	claim("lost1", 2)
	f.clock.advance(2 * time.Minute)
	n, err = f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, store.TaskQueued, f.status(r.ID, "a"), "the released attempt did not use up the task's attempts")
	claim("lost2", 3)
	f.clock.advance(2 * time.Minute)
	n, err = f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, store.TaskFailed, f.status(r.ID, "a"))
	require.Equal(t, store.RunFailed, f.run(r.ID).Status)
}

func testPruneRuns(f *fixture, ws store.Workers) {
	t := f.t
	old := newRun("wf", "t", task("a"))
	running := newRun("wf", "t", task("a"))
	f.create(old, running)
	for _, ct := range f.claim(10) {
		if ct.RunID == old.ID {
			f.complete(done(ct, `1`))
		}
	}
	f.clock.advance(time.Hour)
	recent := newRun("wf", "t", task("a"))
	f.create(recent)
	f.complete(done(f.claimOne(), `1`))

	n, err := ws.PruneRuns(f.ctx, f.clock.Now().Add(-30*time.Minute), 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = f.st.GetRun(f.ctx, old.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound)
	ev, err := f.st.ListEvents(f.ctx, old.ID)
	if err == nil {
		require.Empty(t, ev, "a pruned run leaves no events")
	}
	require.Equal(t, store.RunRunning, f.run(running.ID).Status)
	require.Equal(t, store.RunCompleted, f.run(recent.ID).Status)
}

// testNotifier checks that enqueuing work notifies a subscriber.
func testNotifier(f *fixture) {
	t := f.t
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	ch, err := f.st.Subscribe(ctx)
	require.NoError(t, err)
	f.create(newRun("wf", "t", task("a"), task("b", "a")))
	wait := func(what string) {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no notification after %s", what)
		}
	}
	wait("creating a run")
	f.complete(done(f.claimOne(), `1`))
	wait("enqueuing a child")
}

// testCancelNotifier checks store.CancelNotifier: cancelling a run
// announces its id once, failing a run or cancelling a finished one does
// not, and a Subscribe subscription that ends leaves the cancel
// subscription working.
func testCancelNotifier(f *fixture) {
	t := f.t
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	ch, err := f.st.SubscribeCancels(ctx)
	require.NoError(t, err)
	short, end := context.WithCancel(f.ctx)
	_, err = f.st.Subscribe(short)
	require.NoError(t, err)
	end()
	next := func(what string) dag.RunID {
		t.Helper()
		select {
		case id := <-ch:
			return id
		case <-time.After(10 * time.Second):
			t.Fatalf("no cancel notification after %s", what)
			return dag.RunID{}
		}
	}

	failed := newRun("wf", "t", task("a"), task("b"))
	cancelled := newRun("wf", "t", task("a"), task("b"))
	f.create(failed, cancelled)
	for _, ct := range f.claim(10) {
		if ct.RunID == failed.ID && ct.Step == "a" {
			f.complete(store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeFailed, Error: "boom"})
		}
	}
	require.Equal(t, store.RunFailed, f.run(failed.ID).Status)
	ok, err := f.st.CancelRun(f.ctx, cancelled.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, cancelled.ID, next("cancelling a run"), "the cancelled run is announced, the failed one is not")

	ok, err = f.st.CancelRun(f.ctx, cancelled.ID)
	require.NoError(t, err)
	require.False(t, ok)
	other := newRun("wf", "t", task("a"))
	f.create(other)
	ok, err = f.st.CancelRun(f.ctx, other.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, other.ID, next("cancelling another run"), "cancelling a finished run announces nothing")
}

// testRunStatus checks store.StatusReader: a run's status as GetRun has
// it, finished or not, and an unknown id's error.
func testRunStatus(f *fixture) {
	t := f.t
	check := func(id dag.RunID, want store.RunStatus) {
		t.Helper()
		got, err := f.st.RunStatus(f.ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Equal(t, f.run(id).Status, got)
	}
	r := newRun("wf", "t", task("a"))
	c := newRun("wf", "t", task("a"))
	f.create(r, c)
	check(r.ID, store.RunRunning)
	for _, ct := range f.claim(10) {
		if ct.RunID == r.ID {
			f.complete(done(ct, `1`))
		}
	}
	check(r.ID, store.RunCompleted)
	_, err := f.st.CancelRun(f.ctx, c.ID)
	require.NoError(t, err)
	check(c.ID, store.RunCancelled)

	_, err = f.st.RunStatus(f.ctx, dag.NewRunID())
	require.ErrorIs(t, err, store.ErrRunNotFound)
}

// testReadRun checks store.RunReader: a run and its tasks, as GetRun and
// ListTasks return them, finished or not, and an unknown id's error.
func testReadRun(f *fixture) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b", "a"))
	f.create(r)
	check := func(when string) {
		t.Helper()
		run, tasks, err := f.st.ReadRun(f.ctx, r.ID)
		require.NoError(t, err, when)
		require.Equal(t, f.run(r.ID), run, when)
		list, err := f.st.ListTasks(f.ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, list, tasks, when)
	}
	check("created")
	f.complete(done(f.claimOne(), `1`))
	check("a completed")
	f.complete(done(f.claimOne(), `2`))
	check("finished")
	require.Equal(t, store.RunCompleted, f.run(r.ID).Status)

	_, _, err := f.st.ReadRun(f.ctx, dag.NewRunID())
	require.ErrorIs(t, err, store.ErrRunNotFound)
}

// testStartRuns checks store.Starter: it claims the first root of each
// tenant that has nothing queued past the head block, RUNNING for the
// worker with the events and the lease a claim from the queue gives; it
// enqueues the others; and a failed start creates nothing.
func testStartRuns(f *fixture) {
	t := f.t
	start := func(limit int, runs ...store.NewRun) []store.ClaimedTask {
		t.Helper()
		claimed, err := f.st.StartRuns(f.ctx, runs, store.ClaimParams{Worker: "w1", Signatures: []string{"wf"}, Limit: limit, Lease: time.Minute})
		require.NoError(t, err)
		return claimed
	}
	r1 := newRun("wf", "t1", task("a"), task("b", "a"), task("c"))
	other := newRun("other", "t3", task("x")) // not a workflow the worker claims
	r3 := newRun("wf", "t2", task("y"))
	r4 := newRun("wf", "t4", task("z")) // past the limit of two tenants
	claimed := start(2, r1, other, r3, r4)
	require.Equal(t, []store.ClaimedTask{
		{RunID: r1.ID, Workflow: "wf", Tenant: "t1", Step: "a", Kind: store.KindStep, Attempt: 1, Signature: "wf", Input: r1.Input},
		{RunID: r3.ID, Workflow: "wf", Tenant: "t2", Step: "y", Kind: store.KindStep, Attempt: 1, Signature: "wf", Input: r3.Input},
	}, withoutClaims(t, claimed), "each tenant's first root, in run order, up to the limit")
	tasks := f.tasks(r1.ID)
	require.Equal(t, store.TaskRunning, tasks["a"].Status)
	require.Equal(t, 1, tasks["a"].Attempt)
	require.Equal(t, store.TaskQueued, tasks["c"].Status, "one root a tenant: the fair queue has the next")
	require.Equal(t, store.TaskPending, tasks["b"].Status)
	require.Equal(t, store.TaskQueued, f.status(other.ID, "x"), "another workflow's root is enqueued")
	require.Equal(t, store.TaskQueued, f.status(r4.ID, "z"), "a tenant past the limit is enqueued")
	require.Equal(t, store.TaskRunning, f.status(r3.ID, "y"))
	require.Equal(t, store.RunRunning, f.run(r1.ID).Status)

	// The queue holds only the roots that were not claimed.
	rest := f.claim(10)
	require.ElementsMatch(t, []string{"c", "x", "z"}, steps(rest))
	for _, ct := range rest {
		f.complete(done(ct, `0`))
	}

	// The started roots complete like claimed ones and resolve their children.
	f.complete(done(claimed[0], `1`))
	f.complete(done(claimed[1], `3`))
	b := f.claimOne()
	require.Equal(t, "b", b.Step)
	require.Equal(t, []store.ParentResult{{Step: "a", Status: store.TaskCompleted, Output: []byte(`1`)}}, b.Parents)
	require.Equal(t, store.RunCompleted, f.complete(done(b, `2`))[0].RunStatus)
	require.Equal(t, []stepEvent{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"c", store.EventQueued, 0},
		{"c", store.EventStarted, 1}, {"c", store.EventCompleted, 1},
		{"a", store.EventCompleted, 1}, {"b", store.EventQueued, 0},
		{"b", store.EventStarted, 1}, {"b", store.EventCompleted, 1},
	}, f.stepEvents(r1.ID))

	// A tenant with a backlog starts nothing: its new root queues behind
	// the backlog, and a tenant without one still starts.
	var backlog []store.NewRun
	for range 3 {
		backlog = append(backlog, newRun("wf", "busy", task("q")))
	}
	f.create(backlog...)
	late := newRun("wf", "busy", task("q"))
	fresh := newRun("wf", "idle", task("i"))
	claimed = start(5, late, fresh)
	require.Len(t, claimed, 1)
	require.Equal(t, fresh.ID, claimed[0].RunID)
	require.Equal(t, store.TaskQueued, f.status(late.ID, "q"))
	f.complete(done(claimed[0], `0`))
	var order []dag.RunID
	for _, ct := range f.claim(10) {
		order = append(order, ct.RunID)
		f.complete(done(ct, `0`))
	}
	require.Equal(t, []dag.RunID{backlog[0].ID, backlog[1].ID, backlog[2].ID, late.ID}, order, "behind its backlog")

	// Once its queue is drained, the tenant starts again.
	again := newRun("wf", "busy", task("q"))
	require.Len(t, start(1, again), 1)

	// A started root holds a lease: once it ends, the task is rescued.
	n, err := f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 0, n, "lease still held")
	f.clock.advance(time.Minute + time.Second)
	n, err = f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rescued := f.claimOne()
	require.Equal(t, again.ID, rescued.RunID)
	require.Equal(t, 2, rescued.Attempt)

	// Limit 0 starts nothing: StartRuns is CreateRuns.
	queued := newRun("wf", "t9", task("q"))
	require.Empty(t, start(0, queued))
	require.Equal(t, store.TaskQueued, f.status(queued.ID, "q"))

	// A run that exists already fails the whole start: nothing is created
	// or claimed.
	fresh2 := newRun("wf", "t8", task("f"))
	_, err = f.st.StartRuns(f.ctx, []store.NewRun{fresh2, r1}, store.ClaimParams{Worker: "w1", Limit: 5, Lease: time.Minute})
	require.ErrorIs(t, err, store.ErrRunExists)
	_, err = f.st.GetRun(f.ctx, fresh2.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound)
}

// testHeartbeatReleasesUnreceivedClaims claims tasks for a worker as if the
// answer to the claim were lost: the worker never names their attempts in
// its heartbeats. Once claimed longer than the heartbeat's ttl ago, they
// are released for another worker, and the lost attempt does not count; a
// task claimed more recently, or whose attempt the worker names, is kept.
func testHeartbeatReleasesUnreceivedClaims(f *fixture, ws store.Workers) {
	t := f.t
	lost := newRun("wf", "t", store.NewTask{Name: "a", Kind: store.KindStep, MaxAttempts: 1})
	held := newRun("wf", "t", task("a"))
	f.create(lost, held)
	claimed := f.claim(2)
	require.Len(t, claimed, 2)
	late := newRun("wf", "t", task("a"))
	f.create(late)

	f.clock.advance(30 * time.Second)
	require.Len(t, f.claim(1), 1, "late's task, claimed now")
	holds := []store.HeldAttempt{store.HeldOf(&claimed[0]), store.HeldOf(&claimed[1])}
	holds = slices.DeleteFunc(holds, func(a store.HeldAttempt) bool { return a.RunID != held.ID })
	require.Len(t, holds, 1)
	_, err := ws.Heartbeat(f.ctx, "w1", time.Minute, holds)
	require.NoError(t, err)
	require.Equal(t, store.TaskRunning, f.status(lost.ID, "a"), "claimed 30 s ago: within the ttl, it may still be on its way")

	f.clock.advance(45 * time.Second)
	_, err = ws.Heartbeat(f.ctx, "w1", time.Minute, holds)
	require.NoError(t, err)
	require.Equal(t, store.TaskQueued, f.status(lost.ID, "a"), "claimed 75 s ago and never named: released")
	require.Equal(t, store.TaskRunning, f.status(held.ID, "a"), "its attempt is named: kept")
	require.Equal(t, store.TaskRunning, f.status(late.ID, "a"), "claimed 45 s ago: kept")
	events, err := f.st.ListEvents(f.ctx, lost.ID)
	require.NoError(t, err)
	last := events[len(events)-1]
	require.Equal(t, store.EventQueued, last.Type)
	require.Equal(t, store.EventRescued, events[len(events)-2].Type)
	require.Equal(t, store.NotHeldDetail, events[len(events)-2].Detail)

	// The lost attempt does not count: the task, allowed one attempt, runs.
	again := f.claim(10)
	require.Len(t, again, 1)
	require.Equal(t, lost.ID, again[0].RunID)
	require.Equal(t, 2, again[0].Attempt)
	require.Equal(t, store.OutcomeCompleted, f.complete(done(again[0], "1"))[0].Outcome)
	require.Equal(t, store.RunCompleted, f.run(lost.ID).Status)
}

// testHeartbeatReleasesAttemptsNotHeld: a task the store shows RUNNING for
// a worker that does not hold its attempt (it finished it, and the store
// lost the result with a rolled-back history) is released at its worker's
// next heartbeat past the ttl, though the worker holds another task of the
// same run, and logged for what it is.
func testHeartbeatReleasesAttemptsNotHeld(f *fixture, ws store.Workers) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b"))
	f.create(r)
	claimed := claimedBy(f.claim(2))
	require.Len(t, claimed, 2)
	b := claimed["b"]
	holds := []store.HeldAttempt{store.HeldOf(&b)} // a is done here; the store does not know

	f.clock.advance(75 * time.Second)
	_, err := ws.Heartbeat(f.ctx, "w1", time.Minute, holds)
	require.NoError(t, err)
	require.Equal(t, store.TaskQueued, f.status(r.ID, "a"), "a's attempt is not held: released, though b of its run is")
	require.Equal(t, store.TaskRunning, f.status(r.ID, "b"), "b's attempt is named: kept")
	events, err := f.st.ListEvents(f.ctx, r.ID)
	require.NoError(t, err)
	var details []string
	for _, e := range events {
		if e.Type == store.EventRescued {
			details = append(details, e.Step+": "+e.Detail)
		}
	}
	require.Equal(t, []string{"a: " + store.NotHeldDetail}, details)

	// A heartbeat naming the same attempt number under another claim (the
	// worker's claim of a lost history) does not hold the new claim.
	a := f.claimStep(r.ID, "a")
	f.clock.advance(75 * time.Second)
	other := store.HeldOf(&a)
	other.Claim = claimed["a"].Claim
	_, err = ws.Heartbeat(f.ctx, "w1", time.Minute, []store.HeldAttempt{store.HeldOf(&b), other})
	require.NoError(t, err)
	require.Equal(t, store.TaskQueued, f.status(r.ID, "a"), "another claim's attempt is not this one")
}
