package storetest

import (
	"strconv"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// childTests check child runs (store.KindChild, store.OutcomeChild). The
// engine's part is played by hand: a child task is claimed and handed
// back with OutcomeChild and the run it starts, keyed as the engine keys
// it (store.ChildKey), and the child's tasks are claimed and completed
// like any other.
var childTests = []struct {
	name string
	fn   func(f *fixture, op store.Operator)
}{
	{"ResultFlowsToParent", testChildResultFlows},
	{"NoResultCompletesWithoutOutput", testChildNoResult},
	{"ResultSkippedSkipsParentTask", testChildResultSkipped},
	{"FailedChildFailsParent", testChildFailed},
	{"CancelledChildFailsParent", testChildCancelled},
	{"ParentCancelledCancelsChild", testChildParentCancelled},
	{"ParentFailedCancelsChild", testChildParentFailed},
	{"ParentTimedOutCancelsChild", testChildParentTimedOut},
	{"SecondCompletionIsStale", testChildSecondCompletion},
	{"KeyTakenCreatesNoRun", testChildKeyTaken},
	{"InEndedRunIsStale", testChildInEndedRun},
	{"MappedElements", testChildMapped},
	{"ChildrenFilter", testChildFilter},
	{"ListChildrenUnknownRun", testChildListUnknown},
}

// childTask is a child step.
func childTask(name string, parents ...string) store.NewTask {
	return store.NewTask{Name: name, Kind: store.KindChild, Parents: parents, MaxAttempts: 3}
}

// parentRun is ship (a child step, signature "wf/ship") and side (a step,
// "wf/side"), both roots, then done after ship ("wf"), and an onfailure
// task. Signatures let a test claim the one task it means to.
func parentRun() store.NewRun {
	ship := childTask("ship")
	ship.Signature = "wf/ship"
	side := task("side")
	side.Signature = "wf/side"
	return newRun("wf", "t", ship, side, task("done", "ship"),
		store.NewTask{Name: "@onfailure", Kind: store.KindOnFailure, MaxAttempts: 1})
}

// childOf is the run attempt ct of a child task starts, as the engine
// builds it: a run of "kid" (one task, label, signature "kid") keyed by
// the attempt, whose result task is result.
func childOf(ct store.ClaimedTask, result string) store.NewRun {
	nr := newRun("kid", ct.Tenant, task("label"))
	nr.Key = store.ChildKey(ct.RunID, ct.Step, ct.Attempt)
	nr.Parent = &store.ParentLink{Run: ct.RunID, Task: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Result: result}
	return nr
}

// startChild is the engine's result for attempt ct of a child task that
// starts child.
func startChild(ct store.ClaimedTask, child store.NewRun) store.TaskResult {
	return store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeChild, Child: &child}
}

// claimSig claims the one queued task of signature sig.
func (f *fixture) claimSig(sig string) store.ClaimedTask {
	f.t.Helper()
	cts := f.claim(1, sig)
	require.Len(f.t, cts, 1, "one task of %s is queued", sig)
	return cts[0]
}

// shipped claims ship of parent r and starts its child, with result
// task result; it checks what that leaves: the child created and linked,
// its root queued, ship AWAITING.
func (f *fixture) shipped(r store.NewRun, result string) (store.ClaimedTask, store.NewRun) {
	t := f.t
	t.Helper()
	ship := f.claimSig("wf/ship")
	require.Equal(t, "ship", ship.Step)
	require.Equal(t, store.KindChild, ship.Kind)
	child := childOf(ship, result)
	out := f.complete(startChild(ship, child))[0]
	require.Equal(t, store.OutcomeChild, out.Outcome)
	require.Equal(t, store.RunRunning, out.RunStatus)
	require.Equal(t, 1, out.Enqueued, "the child's root is credited to the result that started it")
	require.False(t, out.TimerDue)
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "ship"), "the child task waits for its child")

	run := f.run(child.ID)
	require.Equal(t, "kid", run.Workflow)
	require.Equal(t, store.RunRunning, run.Status)
	require.Equal(t, child.Key, run.Key)
	require.NotNil(t, run.Parent, "the child knows the attempt that started it")
	require.Equal(t, r.ID, run.Parent.Run)
	require.Equal(t, "ship", run.Parent.Task)
	require.Equal(t, ship.Attempt, run.Parent.Attempt)
	require.Equal(t, result, run.Parent.Result)
	require.Equal(t, store.TaskQueued, f.status(child.ID, "label"), "the child's roots are queued")
	return ship, child
}

// fireAll fires every timer due now, until none fires: firing one may set
// another due at once (a child's end, then its parent's).
func (f *fixture) fireAll() {
	f.t.Helper()
	for range 10 {
		n, err := f.st.FireTimers(f.ctx, 100)
		require.NoError(f.t, err)
		if n == 0 {
			return
		}
	}
	f.t.Fatal("timers keep firing")
}

// childEvents is run id's event log of steps, with details.
func (f *fixture) childEvents(id dag.RunID, steps ...string) []sigEv {
	f.t.Helper()
	return f.signalEvents(id, steps...)
}

func awaitingChild(child store.NewRun) string {
	return "child run " + child.ID.String() + " of " + child.Workflow
}

func testChildResultFlows(f *fixture, op store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	ship, child := f.shipped(r, "label")
	require.Empty(t, f.claim(10, "wf/ship"), "an AWAITING child task is not claimable")

	kids, err := op.ListChildren(f.ctx, r.ID)
	require.NoError(t, err)
	require.Len(t, kids, 1)
	require.Equal(t, child.ID, kids[0].ID)
	require.Equal(t, "kid", kids[0].Workflow)
	require.Equal(t, store.RunRunning, kids[0].Status)
	require.Equal(t, "ship", kids[0].Task)
	require.Equal(t, ship.Attempt, kids[0].Attempt)
	require.True(t, kids[0].FinishedAt.IsZero())

	// An AWAITING child task holds no lease: it is not rescued.
	f.clock.advance(time.Hour)
	n, err := f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 0, n)

	label := f.claimSig("kid")
	require.Equal(t, child.ID, label.RunID)
	out := f.complete(done(label, `"L-7"`))[0]
	require.Equal(t, store.RunCompleted, out.RunStatus)
	require.True(t, out.TimerDue, "the child's end sets a timer on its parent's task")
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "ship"), "the parent is resolved in a unit of its own")
	next, pending, err := f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.True(t, pending)
	require.False(t, next.After(f.clock.Now()), "the timer is due at once: %v", next)

	fired, err := f.st.FireTimers(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, fired)
	tk := f.tasks(r.ID)["ship"]
	require.Equal(t, store.TaskCompleted, tk.Status)
	require.Equal(t, []byte(`"L-7"`), tk.Output, "the child's result is the task's output")
	require.Equal(t, store.TaskQueued, f.status(r.ID, "done"), "the child task's children are queued")
	f.requireNoTimer("the fired timer is gone")

	kids, err = op.ListChildren(f.ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, kids[0].Status)
	require.False(t, kids[0].FinishedAt.IsZero())

	d := f.claimSig("wf")
	require.Equal(t, "done", d.Step)
	require.Equal(t, []store.ParentResult{{Step: "ship", Status: store.TaskCompleted, Output: []byte(`"L-7"`)}}, d.Parents)
	f.complete(done(d, ""))
	outs := f.complete(done(f.claimSig("wf/side"), ""))
	require.Equal(t, store.RunCompleted, outs[0].RunStatus)
	require.False(t, outs[0].TimerDue, "a run without a parent that completes sets no timer")

	require.Equal(t, []sigEv{
		{"ship", store.EventQueued, ""},
		{"ship", store.EventStarted, ""},
		{"ship", store.EventAwaiting, awaitingChild(child)},
		{"ship", store.EventCompleted, ""},
		{"done", store.EventQueued, ""},
		{"done", store.EventStarted, ""},
		{"done", store.EventCompleted, ""},
	}, f.childEvents(r.ID, "ship", "done"))
	require.Equal(t, []sigEv{
		{"label", store.EventQueued, ""},
		{"label", store.EventStarted, ""},
		{"label", store.EventCompleted, ""},
	}, f.childEvents(child.ID))
}

// testChildNoResult: a child task without an output completes, without
// one, when its child completes.
func testChildNoResult(f *fixture, _ store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	_, child := f.shipped(r, "")
	f.complete(done(f.claimSig("kid"), `"ignored"`))
	f.fireAll()
	tk := f.tasks(r.ID)["ship"]
	require.Equal(t, store.TaskCompleted, tk.Status)
	require.Nil(t, tk.Output, "no result task: no output")
	require.Equal(t, store.RunCompleted, f.run(child.ID).Status)
	d := f.claimSig("wf")
	require.Equal(t, []store.ParentResult{{Step: "ship", Status: store.TaskCompleted}}, d.Parents)
}

func testChildResultSkipped(f *fixture, _ store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	_, child := f.shipped(r, "label")
	label := f.claimSig("kid")
	out := f.complete(store.TaskResult{RunID: label.RunID, Step: "label", Attempt: label.Attempt, Claim: label.Claim,
		Outcome: store.OutcomeSkipped, Reason: "negative"})[0]
	require.Equal(t, store.RunCompleted, out.RunStatus, "a child whose result is skipped completes")
	require.True(t, out.TimerDue)
	f.fireAll()
	tk := f.tasks(r.ID)["ship"]
	require.Equal(t, store.TaskSkipped, tk.Status)
	require.Equal(t, store.ChildResultSkipped(child.ID, "label"), tk.Reason)
	require.Nil(t, tk.Output)
	d := f.claimSig("wf")
	require.Equal(t, []store.ParentResult{{Step: "ship", Status: store.TaskSkipped}}, d.Parents)
	require.Equal(t, []sigEv{
		{"ship", store.EventQueued, ""},
		{"ship", store.EventStarted, ""},
		{"ship", store.EventAwaiting, awaitingChild(child)},
		{"ship", store.EventSkipped, store.ChildResultSkipped(child.ID, "label")},
		{"done", store.EventQueued, ""},
		{"done", store.EventStarted, ""},
	}, f.childEvents(r.ID, "ship", "done"))
}

func testChildFailed(f *fixture, _ store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	side := f.claimSig("wf/side") // running when the parent fails: left to finish
	_, child := f.shipped(r, "label")
	label := f.claimSig("kid")
	out := f.complete(store.TaskResult{RunID: label.RunID, Step: "label", Attempt: label.Attempt, Claim: label.Claim,
		Outcome: store.OutcomeFailed, Error: "no carrier"})[0]
	require.Equal(t, store.RunFailed, out.RunStatus)
	require.True(t, out.TimerDue)
	require.Equal(t, store.RunRunning, f.run(r.ID).Status, "the parent hears of it when the timer fires")
	f.fireAll()

	msg := store.ChildRunFailed(child.ID, "kid", &dag.Failure{RunID: child.ID, Step: "label", Attempt: 1, Message: "no carrier"})
	require.Equal(t, "child run "+child.ID.String()+" of kid failed at step label: no carrier", msg)
	tasks := f.tasks(r.ID)
	require.Equal(t, store.TaskFailed, tasks["ship"].Status)
	require.Equal(t, msg, tasks["ship"].Error)
	require.Equal(t, store.TaskCancelled, tasks["done"].Status)
	require.Equal(t, store.TaskRunning, tasks["side"].Status)
	run := f.run(r.ID)
	require.Equal(t, store.RunFailed, run.Status)
	require.Equal(t, &dag.Failure{RunID: r.ID, Step: "ship", Attempt: 1, Message: msg}, run.Failure)
	of := f.claimSig("wf")
	require.Equal(t, "@onfailure", of.Step)
	require.Equal(t, run.Failure, of.Failure)
	require.Equal(t, store.OutcomeCompleted, f.complete(done(side, ""))[0].Outcome)
	require.Equal(t, []sigEv{
		{"ship", store.EventQueued, ""},
		{"ship", store.EventStarted, ""},
		{"ship", store.EventAwaiting, awaitingChild(child)},
		{"ship", store.EventFailed, msg},
		{"done", store.EventCancelled, ""},
		{"@onfailure", store.EventQueued, ""},
		{"@onfailure", store.EventStarted, ""},
	}, f.childEvents(r.ID, "ship", "done", "@onfailure"))
}

func testChildCancelled(f *fixture, _ store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	_, child := f.shipped(r, "label")
	ok, err := f.st.CancelRun(f.ctx, child.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "ship"))
	f.fireAll()
	tk := f.tasks(r.ID)["ship"]
	require.Equal(t, store.TaskFailed, tk.Status)
	require.Equal(t, store.ChildRunCancelled(child.ID, "kid"), tk.Error)
	run := f.run(r.ID)
	require.Equal(t, store.RunFailed, run.Status)
	require.Equal(t, store.ChildRunCancelled(child.ID, "kid"), run.Failure.Message)
	require.Equal(t, "@onfailure", f.claimSig("wf").Step)
}

// requireChildCancelled checks that child, whose parent r ended while it
// ran, is cancelled once the timers fire, and that its end changes
// nothing in the parent.
func (f *fixture) requireChildCancelled(r, child store.NewRun) {
	t := f.t
	t.Helper()
	f.fireAll()
	require.Equal(t, store.RunCancelled, f.run(child.ID).Status, "a parent that ended cancels its child")
	require.Equal(t, store.TaskCancelled, f.status(child.ID, "label"))
	require.Empty(t, f.claim(10, "kid"), "the cancelled child's queue entries are gone")
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "ship"), "the parent's end cancelled the waiting task")
	require.Equal(t, 1, f.countEvents(r.ID, store.EventCancelled)["ship"], "the child's end does not touch it again")
	f.requireNoTimer("nothing is left to fire")
}

func testChildParentCancelled(f *fixture, _ store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	_, child := f.shipped(r, "label")
	ok, err := f.st.CancelRun(f.ctx, r.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, store.RunRunning, f.run(child.ID).Status, "the child is cancelled in a unit of its own")
	f.requireChildCancelled(r, child)
	require.Equal(t, store.RunCancelled, f.run(r.ID).Status)
}

func testChildParentFailed(f *fixture, _ store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	side := f.claimSig("wf/side")
	_, child := f.shipped(r, "label")
	out := f.complete(store.TaskResult{RunID: r.ID, Step: "side", Attempt: side.Attempt, Claim: side.Claim,
		Outcome: store.OutcomeFailed, Error: "declined"})[0]
	require.Equal(t, store.RunFailed, out.RunStatus)
	require.True(t, out.TimerDue, "a run that fails with a child under way sets a timer on it")
	f.requireChildCancelled(r, child)
	require.Equal(t, "side", f.run(r.ID).Failure.Step, "the child's cancellation does not rewrite the failure")
}

func testChildParentTimedOut(f *fixture, _ store.Operator) {
	t := f.t
	r := parentRun()
	r.Timeout = 48 * time.Hour
	f.create(r)
	_, child := f.shipped(r, "label")
	f.fireDue(49 * time.Hour)
	run := f.run(r.ID)
	require.Equal(t, store.RunFailed, run.Status)
	require.Equal(t, store.DeadlineStep, run.Failure.Step)
	f.requireChildCancelled(r, child)
}

func testChildSecondCompletion(f *fixture, op store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	ship, child := f.shipped(r, "label")
	again := childOf(ship, "label") // a new id, the attempt's key
	out := f.complete(startChild(ship, again))[0]
	require.Equal(t, store.OutcomeStale, out.Outcome, "the attempt's result was stored already")
	require.Equal(t, 0, out.Enqueued)
	_, err := f.st.GetRun(f.ctx, again.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "a stale result creates no run")
	out = f.complete(startChild(ship, child))[0]
	require.Equal(t, store.OutcomeStale, out.Outcome, "the very same result again")
	kids, err := op.ListChildren(f.ctx, r.ID)
	require.NoError(t, err)
	require.Len(t, kids, 1)
	require.Equal(t, child.ID, kids[0].ID)
	require.Len(t, f.claim(10, "kid"), 1, "one child, one root queued")

	// Both results in one batch: the first is applied, the second stale.
	r2 := parentRun()
	f.create(r2)
	ship2 := f.claimSig("wf/ship")
	c1, c2 := childOf(ship2, "label"), childOf(ship2, "label")
	outs := f.complete(startChild(ship2, c1), startChild(ship2, c2))
	require.Equal(t, store.OutcomeChild, outs[0].Outcome)
	require.Equal(t, store.OutcomeStale, outs[1].Outcome)
	_, err = f.st.GetRun(f.ctx, c2.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound)
	kids, err = op.ListChildren(f.ctx, r2.ID)
	require.NoError(t, err)
	require.Len(t, kids, 1)
	require.Equal(t, c1.ID, kids[0].ID)
}

// testChildKeyTaken: when a run holds the attempt's child key already,
// the attempt creates no second run.
func testChildKeyTaken(f *fixture, op store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	ship := f.claimSig("wf/ship")
	holder := childOf(ship, "label")
	holder.Parent = nil // created as a trigger would, with the key
	f.create(holder)
	child := childOf(ship, "label")
	out := f.complete(startChild(ship, child))[0]
	require.Equal(t, store.OutcomeChild, out.Outcome)
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "ship"), "the task waits for the run that has the key")
	_, err := f.st.GetRun(f.ctx, child.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "no second run with the key")
	counts, err := op.CountRuns(f.ctx, store.RunFilter{Workflow: "kid"})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunRunning: 1}, counts)
	require.Len(t, f.claim(10, "kid"), 1, "only the holder's root is queued")
}

func testChildInEndedRun(f *fixture, _ store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	side := f.claimSig("wf/side")
	ship := f.claimSig("wf/ship")
	f.complete(store.TaskResult{RunID: r.ID, Step: "side", Attempt: side.Attempt, Claim: side.Claim, Outcome: store.OutcomeFailed, Error: "declined"})
	require.Equal(t, store.TaskRunning, f.status(r.ID, "ship"), "a failed run lets running attempts finish")
	child := childOf(ship, "label")
	out := f.complete(startChild(ship, child))[0]
	require.Equal(t, store.OutcomeStale, out.Outcome)
	require.Equal(t, store.RunFailed, out.RunStatus)
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "ship"))
	_, err := f.st.GetRun(f.ctx, child.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "a run that ended starts no child")
	require.Empty(t, f.claim(10, "kid"))
}

// testChildMapped: each element of a mapped step starts a child, at most
// limit at once, and the mapped step collects their results in order.
func testChildMapped(f *fixture, op store.Operator) {
	t := f.t
	r := mapRun()
	f.create(r)
	out := f.mapped(r, 3, 2)
	require.Equal(t, 2, out.Enqueued)
	children := map[string]store.NewRun{} // by element
	start := func(want int) {
		t.Helper()
		els := f.claim(10, "wf/sq")
		require.Len(t, els, want, "the limit admits elements as others resolve")
		for _, el := range els {
			child := childOf(el, "label")
			require.Equal(t, store.OutcomeChild, f.complete(startChild(el, child))[0].Outcome)
			require.Equal(t, store.TaskAwaiting, f.status(r.ID, el.Step))
			children[el.Step] = child
		}
	}
	finish := func(want int) {
		t.Helper()
		labels := f.claim(10, "kid")
		require.Len(t, labels, want)
		for _, lb := range labels {
			for step, c := range children {
				if c.ID == lb.RunID {
					f.complete(done(lb, strconv.Quote("L-"+step)))
				}
			}
		}
		f.fireAll()
	}
	start(2)
	require.Empty(t, f.claim(10, "wf/sq"), "limit 2: the third element waits while two children run")
	finish(2)
	require.Equal(t, store.TaskMapping, f.status(r.ID, "sq"))
	start(1)
	finish(1)
	require.Len(t, children, 3)
	tasks := f.tasks(r.ID)
	for i := range 3 {
		require.Equal(t, store.TaskCompleted, tasks[store.ElementName("sq", i)].Status)
	}
	require.Equal(t, store.TaskCompleted, tasks["sq"].Status)
	require.JSONEq(t, `["L-sq[0]","L-sq[1]","L-sq[2]"]`, string(tasks["sq"].Output))
	sum := f.claimSig("wf")
	require.Equal(t, "sum", sum.Step)
	require.JSONEq(t, `["L-sq[0]","L-sq[1]","L-sq[2]"]`, string(sum.Parents[0].Output))

	kids, err := op.ListChildren(f.ctx, r.ID)
	require.NoError(t, err)
	require.Len(t, kids, 3)
	got := map[string]dag.RunID{}
	for _, k := range kids {
		require.Equal(t, 1, k.Attempt)
		require.Equal(t, store.RunCompleted, k.Status)
		got[k.Task] = k.ID
	}
	for step, c := range children {
		require.Equal(t, c.ID, got[step], "the child of %s", step)
	}
}

func testChildFilter(f *fixture, op store.Operator) {
	t := f.t
	r := parentRun()
	f.create(r)
	_, child := f.shipped(r, "label")
	for _, c := range []struct {
		flt  store.ChildFilter
		want []dag.RunID
	}{
		{store.AllRuns, []dag.RunID{r.ID, child.ID}},
		{store.OnlyChild, []dag.RunID{child.ID}},
		{store.NoChildren, []dag.RunID{r.ID}},
	} {
		require.ElementsMatch(t, c.want, listAll(f, op, store.RunFilter{Children: c.flt}), "filter %q", c.flt)
		counts, err := op.CountRuns(f.ctx, store.RunFilter{Children: c.flt})
		require.NoError(t, err)
		require.Equal(t, map[store.RunStatus]int{store.RunRunning: len(c.want)}, counts, "filter %q", c.flt)
	}
	counts, err := op.CountRuns(f.ctx, store.RunFilter{Children: store.OnlyChild, Workflow: "wf"})
	require.NoError(t, err)
	require.Empty(t, counts, "the filter combines with the others")
}

func testChildListUnknown(f *fixture, op store.Operator) {
	t := f.t
	_, err := op.ListChildren(f.ctx, dag.NewRunID())
	require.ErrorIs(t, err, store.ErrRunNotFound)
	r := parentRun()
	f.create(r)
	kids, err := op.ListChildren(f.ctx, r.ID)
	require.NoError(t, err)
	require.Empty(t, kids, "a run without children lists none")
}
