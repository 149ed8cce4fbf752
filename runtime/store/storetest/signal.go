package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// signalTests check store.Signaler. The engine's part of a signal wait is
// played by hand: its task is claimed and handed back with OutcomeAwait.
var signalTests = []struct {
	name string
	fn   func(f *fixture, sg store.Signaler)
}{
	{"DeliveredDuringWait", testSignalDuringWait},
	{"HeldBeforeWait", testSignalHeld},
	{"TimeoutSkips", testSignalTimeout},
	{"WaitWithoutEnd", testSignalWaitForever},
	{"Errors", testSignalErrors},
	{"AwaitInFinishedRunIsStale", testSignalAwaitStale},
	{"LastTaskCompletesRun", testSignalLastTask},
	{"ConcurrentSendsDeliverOnce", testSignalConcurrentDelivered},
	{"ConcurrentSendsHoldOnce", testSignalConcurrentHeld},
}

// noSignal is the reason a wait of 72h is skipped with when it ends.
const noSignal = "no signal within 72h"

// waitTask is a signal wait.
func waitTask(name string, parents ...string) store.NewTask {
	return store.NewTask{Name: name, Kind: store.KindSignal, Parents: parents, MaxAttempts: 3}
}

// signalRun is submit, approval (a signal wait after submit) and after.
func signalRun() store.NewRun {
	return newRun("wf", "t", task("submit"), waitTask("approval", "submit"), task("after", "approval"))
}

// waitRun is approval (a signal wait, a root) and after.
func waitRun() store.NewRun {
	return newRun("wf", "t", waitTask("approval"), task("after", "approval"))
}

// awaitFor is the engine's result for a claimed signal wait: wait for d,
// or for ever when d is zero.
func awaitFor(ct store.ClaimedTask, d time.Duration) store.TaskResult {
	res := store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeAwait, Delay: d}
	if d > 0 {
		res.Reason = noSignal
	}
	return res
}

// claimStep claims the one queued task, which must be step of run id.
func (f *fixture) claimStep(id dag.RunID, step string) store.ClaimedTask {
	f.t.Helper()
	ct := f.claimOne()
	require.Equal(f.t, id, ct.RunID)
	require.Equal(f.t, step, ct.Step)
	return ct
}

// reachWait completes the submit task of a signalRun and claims its
// signal wait.
func (f *fixture) reachWait(id dag.RunID) store.ClaimedTask {
	f.t.Helper()
	outs := f.complete(done(f.claimStep(id, "submit"), `"s"`))
	require.Equal(f.t, 1, outs[0].Enqueued, "the wait is queued when its parent completes")
	require.Equal(f.t, store.TaskQueued, f.status(id, "approval"))
	ap := f.claimStep(id, "approval")
	require.Equal(f.t, store.KindSignal, ap.Kind)
	return ap
}

// awaiting hands the claimed wait back with OutcomeAwait for d and checks
// that it is AWAITING.
func (f *fixture) awaiting(ap store.ClaimedTask, d time.Duration) {
	f.t.Helper()
	outs := f.complete(awaitFor(ap, d))
	require.Equal(f.t, store.CompletionOutcome{Outcome: store.OutcomeAwait, RunStatus: store.RunRunning}, outs[0])
	require.Equal(f.t, store.TaskAwaiting, f.status(ap.RunID, ap.Step))
}

// sigEv is an event without its time and attempt. The detail of an
// AWAITING event, a time, is normalized to RFC 3339 in UTC so that any
// RFC 3339 rendering of the same instant compares equal.
type sigEv struct {
	Step   string
	Type   store.EventType
	Detail string
}

func (f *fixture) signalEvents(id dag.RunID, steps ...string) []sigEv {
	f.t.Helper()
	events, err := f.st.ListEvents(f.ctx, id)
	require.NoError(f.t, err)
	var out []sigEv
	for _, e := range events {
		if len(steps) > 0 && !slices.Contains(steps, e.Step) {
			continue
		}
		d := e.Detail
		if e.Type == store.EventAwaiting && d != "" {
			if at, err := time.Parse(time.RFC3339Nano, d); err == nil {
				d = at.UTC().Format(time.RFC3339Nano)
			}
		}
		out = append(out, sigEv{e.Step, e.Type, d})
	}
	return out
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// requireNoTimer checks that no timer is pending.
func (f *fixture) requireNoTimer(msg string) {
	f.t.Helper()
	_, pending, err := f.st.NextTimer(f.ctx)
	require.NoError(f.t, err)
	require.False(f.t, pending, msg)
}

func testSignalDuringWait(f *fixture, sg store.Signaler) {
	t := f.t
	r := signalRun()
	f.create(r)
	ap := f.reachWait(r.ID)
	require.Equal(t, []store.ParentResult{{Step: "submit", Status: store.TaskCompleted, Output: []byte(`"s"`)}}, ap.Parents)
	f.awaiting(ap, 72*time.Hour)
	wake := epoch.Add(72 * time.Hour)
	tk := f.tasks(r.ID)["approval"]
	require.True(t, tk.WakeAt.Equal(wake), "wakes at the end of the wait: %v", tk.WakeAt)
	next, pending, err := f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.True(t, pending, "the wait has a timer")
	require.True(t, next.Equal(wake), "next timer %v", next)
	require.Empty(t, f.claim(10), "an AWAITING task is not claimable")

	// An AWAITING task holds no lease: it is not rescued.
	f.clock.advance(time.Hour)
	n, err := f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "approval"))

	delivered, err := sg.SendSignal(f.ctx, r.ID, "approval", []byte(`{"ok":true}`))
	require.NoError(t, err)
	require.True(t, delivered, "a signal to an AWAITING wait is delivered")
	tk = f.tasks(r.ID)["approval"]
	require.Equal(t, store.TaskCompleted, tk.Status)
	require.JSONEq(t, `{"ok":true}`, string(tk.Output), "the payload is the wait's output")
	require.Equal(t, store.TaskQueued, f.status(r.ID, "after"))
	require.Equal(t, store.RunRunning, f.run(r.ID).Status)

	after := f.claimStep(r.ID, "after")
	require.Len(t, after.Parents, 1)
	require.Equal(t, "approval", after.Parents[0].Step)
	require.Equal(t, store.TaskCompleted, after.Parents[0].Status)
	require.JSONEq(t, `{"ok":true}`, string(after.Parents[0].Output), "the child reads the payload as its parent's output")

	require.Equal(t, []sigEv{
		{"approval", store.EventQueued, ""},
		{"approval", store.EventStarted, ""},
		{"approval", store.EventAwaiting, rfc3339(wake)},
		{"approval", store.EventSignalled, store.SignalDelivered},
		{"approval", store.EventCompleted, ""},
		{"after", store.EventQueued, ""},
		{"after", store.EventStarted, ""},
	}, f.signalEvents(r.ID, "approval", "after"))

	// The wait's timer went with it.
	f.requireNoTimer("the delivered wait's timer is gone")
	f.clock.advance(72 * time.Hour)
	fired, err := f.st.FireTimers(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 0, fired, "the delivered wait's timer does not fire")
	require.Equal(t, store.TaskCompleted, f.status(r.ID, "approval"))
	require.JSONEq(t, `{"ok":true}`, string(f.tasks(r.ID)["approval"].Output))

	outs := f.complete(done(after, `1`))
	require.Equal(t, store.RunCompleted, outs[0].RunStatus)
}

// testSignalHeld sends the signal while the wait is PENDING, QUEUED and
// RUNNING: it is held, once, and completes the wait as soon as the wait
// would begin.
func testSignalHeld(f *fixture, sg store.Signaler) {
	t := f.t
	for _, stage := range []store.TaskStatus{store.TaskPending, store.TaskQueued, store.TaskRunning} {
		r := signalRun()
		f.create(r)
		submit := f.claimStep(r.ID, "submit")
		send := func() {
			t.Helper()
			require.Equal(t, stage, f.status(r.ID, "approval"))
			delivered, err := sg.SendSignal(f.ctx, r.ID, "approval", []byte(`"early"`))
			require.NoError(t, err, stage)
			require.False(t, delivered, "%s: a signal before the wait is held, not delivered", stage)
			require.Equal(t, stage, f.status(r.ID, "approval"), "holding a signal does not move the wait")

			delivered, err = sg.SendSignal(f.ctx, r.ID, "approval", []byte(`"second"`))
			require.ErrorIs(t, err, store.ErrSignalHeld, stage)
			require.False(t, delivered)
		}
		if stage == store.TaskPending {
			send()
		}
		outs := f.complete(done(submit, `"s"`))
		require.Equal(t, 1, outs[0].Enqueued)
		if stage == store.TaskQueued {
			send()
		}
		ap := f.claimStep(r.ID, "approval")
		if stage == store.TaskRunning {
			send()
		}

		outs = f.complete(awaitFor(ap, 72*time.Hour))
		require.Equal(t, store.CompletionOutcome{Outcome: store.OutcomeAwait, RunStatus: store.RunRunning, Enqueued: 1}, outs[0],
			"%s: the held signal completes the wait at once and its child is counted", stage)
		tk := f.tasks(r.ID)["approval"]
		require.Equal(t, store.TaskCompleted, tk.Status, stage)
		require.Equal(t, []byte(`"early"`), tk.Output, "%s: the held payload, not the refused one", stage)
		require.Equal(t, store.TaskQueued, f.status(r.ID, "after"))
		f.requireNoTimer(fmt.Sprintf("%s: a wait completed by a held signal has no timer", stage))

		after := f.claimStep(r.ID, "after")
		require.Equal(t, []store.ParentResult{{Step: "approval", Status: store.TaskCompleted, Output: []byte(`"early"`)}}, after.Parents)

		held := sigEv{"approval", store.EventSignalled, store.SignalHeld}
		want := []sigEv{{"approval", store.EventQueued, ""}, {"approval", store.EventStarted, ""}, {"approval", store.EventCompleted, ""}}
		switch stage {
		case store.TaskPending:
			want = append([]sigEv{held}, want...)
		case store.TaskQueued:
			want = append([]sigEv{want[0], held}, want[1:]...)
		case store.TaskRunning:
			want = append(want[:2:2], held, want[2])
		}
		require.Equal(t, want, f.signalEvents(r.ID, "approval"), "%s: no AWAITING event", stage)

		delivered, err := sg.SendSignal(f.ctx, r.ID, "approval", []byte(`"late"`))
		require.ErrorIs(t, err, store.ErrSignalResolved, stage)
		require.False(t, delivered)
		require.Equal(t, store.RunCompleted, f.complete(done(after, ""))[0].RunStatus)
		require.Empty(t, f.claim(10))
	}
}

func testSignalTimeout(f *fixture, sg store.Signaler) {
	t := f.t
	r := signalRun()
	abs := waitRun() // waits until an absolute time
	f.create(r, abs)
	claimed := f.claim(10)
	require.Len(t, claimed, 2)
	for _, ct := range claimed {
		if ct.RunID == abs.ID {
			require.Equal(t, "approval", ct.Step)
			res := awaitFor(ct, 0)
			res.WakeAt, res.Reason = epoch.Add(time.Hour), "no signal by 13:00"
			f.complete(res)
		} else {
			f.complete(done(ct, `"s"`))
		}
	}
	require.True(t, f.tasks(abs.ID)["approval"].WakeAt.Equal(epoch.Add(time.Hour)), "an absolute end is kept as is")
	f.awaiting(f.claimStep(r.ID, "approval"), 72*time.Hour)
	wake := epoch.Add(72 * time.Hour)

	next, pending, err := f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.True(t, pending)
	require.True(t, next.Equal(epoch.Add(time.Hour)), "the earliest wait ends first: %v", next)

	require.Equal(t, 1, f.fireDue(time.Hour))
	tk := f.tasks(abs.ID)["approval"]
	require.Equal(t, store.TaskSkipped, tk.Status)
	require.Equal(t, "no signal by 13:00", tk.Reason)
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "approval"))
	after := f.claimStep(abs.ID, "after")
	require.Equal(t, []store.ParentResult{{Step: "approval", Status: store.TaskSkipped}}, after.Parents)
	f.complete(done(after, ""))

	require.Equal(t, 0, f.fireDue(71*time.Hour-time.Second), "not due yet")
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "approval"))
	require.Equal(t, 1, f.fireDue(time.Second))
	require.Equal(t, 0, f.fireDue(0), "a wait's timer fires once")
	tk = f.tasks(r.ID)["approval"]
	require.Equal(t, store.TaskSkipped, tk.Status)
	require.Equal(t, noSignal, tk.Reason)
	require.Nil(t, tk.Output)
	require.Equal(t, store.TaskQueued, f.status(r.ID, "after"), "the skipped wait's child is resolved")
	after = f.claimStep(r.ID, "after")
	require.Equal(t, []store.ParentResult{{Step: "approval", Status: store.TaskSkipped}}, after.Parents)
	require.Equal(t, []sigEv{
		{"approval", store.EventQueued, ""},
		{"approval", store.EventStarted, ""},
		{"approval", store.EventAwaiting, rfc3339(wake)},
		{"approval", store.EventSkipped, noSignal},
		{"after", store.EventQueued, ""},
		{"after", store.EventStarted, ""},
	}, f.signalEvents(r.ID, "approval", "after"))

	delivered, err := sg.SendSignal(f.ctx, r.ID, "approval", []byte(`"late"`))
	require.ErrorIs(t, err, store.ErrSignalResolved, "a wait that timed out is resolved")
	require.False(t, delivered)
	require.Equal(t, store.TaskSkipped, f.status(r.ID, "approval"))
	require.Equal(t, store.RunCompleted, f.complete(done(after, ""))[0].RunStatus)
}

func testSignalWaitForever(f *fixture, sg store.Signaler) {
	t := f.t
	r := waitRun()
	f.create(r)
	ap := f.claimStep(r.ID, "approval")
	f.awaiting(ap, 0)
	tk := f.tasks(r.ID)["approval"]
	require.True(t, tk.WakeAt.IsZero(), "a wait without end has no wake time: %v", tk.WakeAt)
	f.requireNoTimer("a wait without end has no timer")
	require.Equal(t, []sigEv{
		{"approval", store.EventQueued, ""},
		{"approval", store.EventStarted, ""},
		{"approval", store.EventAwaiting, ""},
	}, f.signalEvents(r.ID), "the AWAITING event of a wait without end has no detail")

	require.Equal(t, 0, f.fireDue(10*365*24*time.Hour))
	n, err := f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "approval"), "still waiting years later")

	delivered, err := sg.SendSignal(f.ctx, r.ID, "approval", []byte(`"finally"`))
	require.NoError(t, err)
	require.True(t, delivered)
	require.Equal(t, store.TaskCompleted, f.status(r.ID, "approval"))
	after := f.claimStep(r.ID, "after")
	require.Equal(t, []store.ParentResult{{Step: "approval", Status: store.TaskCompleted, Output: []byte(`"finally"`)}}, after.Parents)
}

func testSignalErrors(f *fixture, sg store.Signaler) {
	t := f.t
	send := func(id dag.RunID, step string) error {
		t.Helper()
		delivered, err := sg.SendSignal(f.ctx, id, step, []byte(`"x"`))
		require.False(t, delivered)
		return err
	}
	require.ErrorIs(t, send(dag.NewRunID(), "approval"), store.ErrRunNotFound)

	r := signalRun()
	f.create(r)
	require.ErrorIs(t, send(r.ID, "submit"), store.ErrNotSignal, "a step that is not a signal wait")
	require.ErrorIs(t, send(r.ID, "ghost"), store.ErrNotSignal, "an unknown step")
	require.Equal(t, store.TaskPending, f.status(r.ID, "approval"))
	for _, e := range f.signalEvents(r.ID) {
		require.NotEqual(t, store.EventSignalled, e.Type, "a refused signal logs nothing")
	}

	// Delivered: a second signal is refused and changes nothing.
	f.awaiting(f.reachWait(r.ID), 72*time.Hour)
	delivered, err := sg.SendSignal(f.ctx, r.ID, "approval", []byte(`"first"`))
	require.NoError(t, err)
	require.True(t, delivered)
	require.ErrorIs(t, send(r.ID, "approval"), store.ErrSignalResolved, "a delivered wait")
	require.Equal(t, []byte(`"first"`), f.tasks(r.ID)["approval"].Output)
	f.complete(done(f.claimStep(r.ID, "after"), ""))
	require.Equal(t, store.RunCompleted, f.run(r.ID).Status)
	require.ErrorIs(t, send(r.ID, "approval"), store.ErrSignalResolved, "resolved is checked before the run's end")

	// Cancelled while AWAITING: the wait is cancelled, hence resolved.
	cancelled := waitRun()
	f.create(cancelled)
	f.awaiting(f.claimStep(cancelled.ID, "approval"), 72*time.Hour)
	ok, err := f.st.CancelRun(f.ctx, cancelled.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, store.TaskCancelled, f.status(cancelled.ID, "approval"))
	require.ErrorIs(t, send(cancelled.ID, "approval"), store.ErrSignalResolved, "a cancelled wait")
	f.requireNoTimer("the cancelled wait's timer is gone")

	// Failed by another task while the wait is PENDING: the failure
	// cancels the wait, so it is resolved (checked before the run's end).
	failed := newRun("wf", "t", task("submit"), task("bad"), waitTask("approval", "submit"), task("after", "approval"))
	f.create(failed)
	for _, ct := range f.claim(10) {
		if ct.Step == "bad" {
			f.complete(store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeFailed, Error: "x"})
		}
	}
	require.Equal(t, store.RunFailed, f.run(failed.ID).Status)
	require.Equal(t, store.TaskCancelled, f.status(failed.ID, "approval"))
	require.ErrorIs(t, send(failed.ID, "approval"), store.ErrSignalResolved, "a wait its run's failure cancelled")

	// Failed while the wait is RUNNING: the wait is left to finish, and the
	// run's end refuses the signal.
	running := newRun("wf", "t", task("bad"), waitTask("approval"))
	f.create(running)
	for _, ct := range f.claim(10) {
		if ct.Step == "bad" {
			f.complete(store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeFailed, Error: "x"})
		}
	}
	require.Equal(t, store.RunFailed, f.run(running.ID).Status)
	require.Equal(t, store.TaskRunning, f.status(running.ID, "approval"))
	err = send(running.ID, "approval")
	require.ErrorIs(t, err, store.ErrRunFinished, "an unresolved wait of a finished run")
	require.False(t, errors.Is(err, store.ErrSignalResolved) || errors.Is(err, store.ErrSignalHeld), "one reason: %v", err)
	for _, e := range f.signalEvents(running.ID) {
		require.NotEqual(t, store.EventSignalled, e.Type, "a refused signal logs nothing")
	}
}

// testSignalAwaitStale hands back OutcomeAwait for waits of runs that are
// no longer RUNNING: the result is stale and the wait cancelled, like a
// sleep's; a held signal is not used.
func testSignalAwaitStale(f *fixture, sg store.Signaler) {
	t := f.t
	failing := func(hold bool) (dag.RunID, store.ClaimedTask) {
		t.Helper()
		r := newRun("wf", "t", task("bad"), waitTask("approval"), task("after", "approval"))
		f.create(r)
		var ap store.ClaimedTask
		claimed := f.claim(10)
		require.Len(t, claimed, 2)
		for _, ct := range claimed {
			if ct.Step == "approval" {
				ap = ct
			}
		}
		if hold {
			delivered, err := sg.SendSignal(f.ctx, r.ID, "approval", []byte(`"held"`))
			require.NoError(t, err)
			require.False(t, delivered)
		}
		for _, ct := range claimed {
			if ct.Step == "bad" {
				f.complete(store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeFailed, Error: "x"})
			}
		}
		require.Equal(t, store.RunFailed, f.run(r.ID).Status)
		require.Equal(t, store.TaskRunning, f.status(r.ID, "approval"), "a running task of a failed run is left to finish")
		return r.ID, ap
	}

	for _, hold := range []bool{false, true} {
		id, ap := failing(hold)
		if hold {
			_, err := sg.SendSignal(f.ctx, id, "approval", []byte(`"again"`))
			require.ErrorIs(t, err, store.ErrSignalHeld, "held is checked before the run's end")
		}
		outs := f.complete(awaitFor(ap, 72*time.Hour))
		require.Equal(t, store.CompletionOutcome{Outcome: store.OutcomeStale, RunStatus: store.RunFailed}, outs[0], "hold=%v", hold)
		tk := f.tasks(id)["approval"]
		require.Equal(t, store.TaskCancelled, tk.Status, "hold=%v: the wait is cancelled", hold)
		require.Nil(t, tk.Output, "hold=%v: a held signal is not used", hold)
		require.Equal(t, store.TaskCancelled, f.status(id, "after"))
		f.requireNoTimer("a stale await arms no timer")
		_, err := sg.SendSignal(f.ctx, id, "approval", []byte(`"late"`))
		require.ErrorIs(t, err, store.ErrSignalResolved)
		for _, e := range f.signalEvents(id, "approval") {
			require.NotEqual(t, store.EventAwaiting, e.Type, "hold=%v", hold)
		}
	}

	// A cancelled run's running wait is cancelled at once: its await is
	// stale too.
	r := waitRun()
	f.create(r)
	ap := f.claimStep(r.ID, "approval")
	ok, err := f.st.CancelRun(f.ctx, r.ID)
	require.NoError(t, err)
	require.True(t, ok)
	outs := f.complete(awaitFor(ap, 72*time.Hour))
	require.Equal(t, store.OutcomeStale, outs[0].Outcome)
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "approval"))
	f.requireNoTimer("a stale await arms no timer")
	require.Empty(t, f.claim(10))
}

func testSignalLastTask(f *fixture, sg store.Signaler) {
	t := f.t
	// Delivered to the run's last task.
	r := newRun("wf", "t", waitTask("approval"))
	f.create(r)
	f.awaiting(f.claimStep(r.ID, "approval"), 72*time.Hour)
	delivered, err := sg.SendSignal(f.ctx, r.ID, "approval", []byte(`"ok"`))
	require.NoError(t, err)
	require.True(t, delivered)
	run := f.run(r.ID)
	require.Equal(t, store.RunCompleted, run.Status, "the signal completes the run")
	require.False(t, run.FinishedAt.IsZero())

	// Held for the last task, used by the await.
	held := newRun("wf", "t", waitTask("approval"))
	f.create(held)
	delivered, err = sg.SendSignal(f.ctx, held.ID, "approval", []byte(`"ok"`))
	require.NoError(t, err)
	require.False(t, delivered)
	outs := f.complete(awaitFor(f.claimStep(held.ID, "approval"), 72*time.Hour))
	require.Equal(t, store.CompletionOutcome{Outcome: store.OutcomeAwait, RunStatus: store.RunCompleted}, outs[0])
	require.Equal(t, store.RunCompleted, f.run(held.ID).Status)

	// Timed out as the last task: a skipped wait completes the run too.
	late := newRun("wf", "t", waitTask("approval"))
	f.create(late)
	f.awaiting(f.claimStep(late.ID, "approval"), time.Hour)
	require.Equal(t, 1, f.fireDue(time.Hour))
	require.Equal(t, store.TaskSkipped, f.status(late.ID, "approval"))
	require.Equal(t, store.RunCompleted, f.run(late.ID).Status)
	_, err = sg.SendSignal(f.ctx, late.ID, "approval", []byte(`"ok"`))
	require.ErrorIs(t, err, store.ErrSignalResolved)
}

// sendAll sends n signals to step of run id at once, payload i from the
// i-th goroutine, and returns what each got.
func sendAll(f *fixture, sg store.Signaler, id dag.RunID, step string, n int) ([]bool, []error) {
	delivered, errs := make([]bool, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			delivered[i], errs[i] = sg.SendSignal(f.ctx, id, step, []byte(fmt.Sprintf("%d", i)))
		}()
	}
	close(start)
	wg.Wait()
	return delivered, errs
}

func countSignalled(evs []sigEv) int {
	n := 0
	for _, e := range evs {
		if e.Type == store.EventSignalled {
			n++
		}
	}
	return n
}

func testSignalConcurrentDelivered(f *fixture, sg store.Signaler) {
	t := f.t
	const senders = 16
	r := waitRun()
	f.create(r)
	f.awaiting(f.claimStep(r.ID, "approval"), 72*time.Hour)
	delivered, errs := sendAll(f, sg, r.ID, "approval", senders)
	winner := -1
	for i := range senders {
		if errs[i] == nil {
			require.Equal(t, -1, winner, "two sends succeeded: %d and %d", winner, i)
			require.True(t, delivered[i])
			winner = i
			continue
		}
		require.ErrorIs(t, errs[i], store.ErrSignalResolved, "send %d", i)
		require.False(t, delivered[i])
	}
	require.NotEqual(t, -1, winner, "one send delivers")
	payload := []byte(fmt.Sprintf("%d", winner))
	require.Equal(t, payload, f.tasks(r.ID)["approval"].Output, "the output is the winner's payload")
	claimed := f.claim(10)
	require.Len(t, claimed, 1, "the child is queued once")
	require.Equal(t, []store.ParentResult{{Step: "approval", Status: store.TaskCompleted, Output: payload}}, claimed[0].Parents)
	require.Equal(t, 1, countSignalled(f.signalEvents(r.ID)))
}

func testSignalConcurrentHeld(f *fixture, sg store.Signaler) {
	t := f.t
	const senders = 16
	r := signalRun()
	f.create(r)
	delivered, errs := sendAll(f, sg, r.ID, "approval", senders)
	winner := -1
	for i := range senders {
		require.False(t, delivered[i], "send %d: nothing is delivered to a PENDING wait", i)
		if errs[i] == nil {
			require.Equal(t, -1, winner, "two sends were held: %d and %d", winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, errs[i], store.ErrSignalHeld, "send %d", i)
	}
	require.NotEqual(t, -1, winner, "one send is held")
	require.Equal(t, store.TaskPending, f.status(r.ID, "approval"))

	ap := f.reachWait(r.ID)
	outs := f.complete(awaitFor(ap, 72*time.Hour))
	require.Equal(t, 1, outs[0].Enqueued)
	payload := []byte(fmt.Sprintf("%d", winner))
	tk := f.tasks(r.ID)["approval"]
	require.Equal(t, store.TaskCompleted, tk.Status)
	require.Equal(t, payload, tk.Output, "the output is the held payload")
	after := f.claimStep(r.ID, "after")
	require.Equal(t, []store.ParentResult{{Step: "approval", Status: store.TaskCompleted, Output: payload}}, after.Parents)
	require.Equal(t, 1, countSignalled(f.signalEvents(r.ID)))
}
