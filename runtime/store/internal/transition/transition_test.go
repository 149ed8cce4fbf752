package transition_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// world is a run with tasks, as a store would load them.
type world struct {
	run   *transition.Run
	tasks map[string]*transition.Task
	b     *transition.Batch
}

func newWorld(pending int, tasks ...*transition.Task) *world {
	w := &world{
		run:   &transition.Run{ID: dag.RunID{1}, Status: store.RunRunning, Pending: pending, EndSrc: -1, Timeout: time.Minute},
		tasks: make(map[string]*transition.Task),
	}
	for _, t := range tasks {
		t.Run = w.run
		w.tasks[t.Name] = t
	}
	w.b = transition.New(now, func(_ *transition.Run, name string) *transition.Task { return w.tasks[name] })
	return w
}

func running(name string, kind store.TaskKind) *transition.Task {
	return &transition.Task{Name: name, Kind: kind, Status: store.TaskRunning, Attempt: 1, MaxAttempts: 2}
}

func (w *world) apply(src int, name string, res store.TaskResult) store.CompletionOutcome {
	res.RunID, res.Step = w.run.ID, name
	if res.Attempt == 0 {
		res.Attempt = 1
	}
	return w.b.Apply(src, w.run, w.tasks[name], &res)
}

// types returns the steps and types of a log.
func types(log []transition.Event) []string {
	out := make([]string, len(log))
	for i, e := range log {
		out[i] = e.Step + " " + string(e.Type)
	}
	return out
}

func TestApplyIsFencedOnTheAttempt(t *testing.T) {
	w := newWorld(2, running("a", store.KindStep))
	out := w.apply(0, "a", store.TaskResult{Attempt: 2, Outcome: store.OutcomeCompleted})
	require.Equal(t, store.OutcomeStale, out.Outcome)
	out = w.b.Apply(0, w.run, nil, &store.TaskResult{RunID: w.run.ID, Step: "x", Attempt: 1, Outcome: store.OutcomeCompleted})
	require.Equal(t, store.OutcomeStale, out.Outcome)
	require.Equal(t, store.RunRunning, out.RunStatus)
	require.Empty(t, w.b.Changed)
	require.Empty(t, w.b.Events)
}

// TestApplyIsFencedOnTheClaim: a result of the same attempt number under
// another claim (one a rolled-back history forgot) is stale, and so is a
// timer another claim's attempt set.
func TestApplyIsFencedOnTheClaim(t *testing.T) {
	a := running("a", store.KindStep)
	a.Claim = 9
	w := newWorld(2, a)
	out := w.apply(0, "a", store.TaskResult{Attempt: 1, Claim: 7, Outcome: store.OutcomeCompleted})
	require.Equal(t, store.OutcomeStale, out.Outcome)
	require.Empty(t, w.b.Changed)
	out = w.apply(0, "a", store.TaskResult{Attempt: 1, Claim: 9, Outcome: store.OutcomeSleep, Delay: time.Hour})
	require.Equal(t, store.OutcomeSleep, out.Outcome)
	require.False(t, w.b.Fire(a, transition.TimerSleep, 1, 7, 1), "another claim's wake")
	require.True(t, w.b.Fire(a, transition.TimerSleep, 1, 9, 1))
}

func TestCompletingTheLastTaskCompletesTheRun(t *testing.T) {
	w := newWorld(2, running("a", store.KindStep), running("b", store.KindStep))
	w.apply(0, "a", store.TaskResult{Outcome: store.OutcomeSkipped, Reason: "skip=p"})
	out := w.apply(1, "b", store.TaskResult{Outcome: store.OutcomeCompleted, Output: []byte(`1`)})
	require.Equal(t, store.RunCompleted, out.RunStatus)
	require.Equal(t, transition.EndCompleted, w.run.End)
	require.Equal(t, []*transition.Run{w.run}, w.b.Ended)
	require.Len(t, w.b.Resolved, 2)
	require.True(t, w.tasks["b"].Completed, "b's COMPLETED is its own result's")
	require.Equal(t, []string{"b COMPLETED", "a SKIPPED"}, types(w.b.Log()),
		"a task's own COMPLETED comes first, then the other events in decision order")
}

func TestFailingATaskFailsTheRunOnce(t *testing.T) {
	w := newWorld(3, running("a", store.KindStep), running("b", store.KindStep), running("@onfailure", store.KindOnFailure))
	w.apply(0, "a", store.TaskResult{Outcome: store.OutcomeFailed, Error: "boom"})
	out := w.apply(1, "b", store.TaskResult{Outcome: store.OutcomeFailed, Error: "bang"})
	require.Equal(t, store.RunFailed, out.RunStatus)
	require.Equal(t, transition.EndFailed, w.run.End)
	require.Equal(t, 0, w.run.EndSrc, "the first failure is credited with the onfailure task")
	require.Equal(t, &dag.Failure{RunID: w.run.ID, Step: "a", Attempt: 1, Message: "boom"}, w.run.Failure)
	require.Len(t, w.b.Ended, 1)

	// A retry in a failed run is cancelled and reported stale, but the
	// onfailure task may retry.
	w2 := newWorld(1, running("c", store.KindStep), running("@onfailure", store.KindOnFailure))
	w2.run.Status = store.RunFailed
	out = w2.apply(0, "c", store.TaskResult{Outcome: store.OutcomeRetry, Delay: time.Second})
	require.Equal(t, store.OutcomeStale, out.Outcome)
	require.Equal(t, store.TaskCancelled, w2.tasks["c"].Status)
	out = w2.apply(1, "@onfailure", store.TaskResult{Outcome: store.OutcomeRetry, Delay: time.Second})
	require.Equal(t, store.OutcomeRetry, out.Outcome)
	require.Equal(t, store.TaskBackoff, w2.tasks["@onfailure"].Status)
	require.Equal(t, transition.TimerRetry, w2.tasks["@onfailure"].Timer)
	require.Equal(t, now.Add(time.Second), w2.tasks["@onfailure"].WakeAt)
}

func TestEndsCancelWhatTheTruthTableSays(t *testing.T) {
	for _, c := range []struct {
		end       transition.End
		st        store.TaskStatus
		kind      store.TaskKind
		cancels   bool
		onFailure bool
	}{
		{transition.EndFailed, store.TaskQueued, store.KindStep, true, true},
		{transition.EndFailed, store.TaskRunning, store.KindStep, false, true},
		{transition.EndFailed, store.TaskPending, store.KindOnFailure, false, true},
		{transition.EndTimedOut, store.TaskRunning, store.KindStep, true, true},
		{transition.EndTimedOut, store.TaskPending, store.KindOnFailure, false, true},
		{transition.EndCancelled, store.TaskPending, store.KindOnFailure, true, false},
		{transition.EndCancelled, store.TaskCompleted, store.KindStep, false, false},
		{transition.EndCompleted, store.TaskPending, store.KindStep, false, false},
	} {
		require.Equal(t, c.cancels, c.end.Cancels(c.st, c.kind), "%v %s %s", c.end, c.st, c.kind)
		require.Equal(t, c.onFailure, c.end.QueuesOnFailure(), "%v", c.end)
		if c.cancels && c.kind != store.KindOnFailure {
			require.Contains(t, c.end.Statuses(), c.st, "%v", c.end)
		}
	}
}

func TestTimersFire(t *testing.T) {
	sleep := &transition.Task{Name: "nap", Kind: store.KindSleep, Status: store.TaskSleeping, Attempt: 1}
	wait := &transition.Task{Name: "sig", Kind: store.KindSignal, Status: store.TaskAwaiting, Attempt: 1, Reason: "no signal"}
	retry := &transition.Task{Name: "r", Kind: store.KindStep, Status: store.TaskBackoff, Attempt: 1}
	w := newWorld(3, sleep, wait, retry)
	require.False(t, w.b.Fire(sleep, transition.TimerSleep, 2, 0, 0), "a stale attempt")
	require.False(t, w.b.Fire(sleep, transition.TimerRetry, 1, 0, 0), "another kind")
	require.True(t, w.b.Fire(sleep, transition.TimerSleep, 1, 0, 0))
	require.True(t, w.b.Fire(wait, transition.TimerSignal, 1, 0, 1))
	require.True(t, w.b.Fire(retry, transition.TimerRetry, 1, 0, 2))
	require.Equal(t, store.TaskCompleted, sleep.Status)
	require.Equal(t, store.TaskSkipped, wait.Status)
	require.Equal(t, store.TaskQueued, retry.Status)
	require.Equal(t, []transition.Source{{Task: retry, Src: 2}}, w.b.Requeued)
	require.Equal(t, []string{"nap WOKEN", "nap COMPLETED", "sig SKIPPED"}, types(w.b.Log()))
}

func TestRescue(t *testing.T) {
	again := running("a", store.KindStep)
	spent := running("b", store.KindStep)
	spent.Attempt = 2
	w := newWorld(2, again, spent)
	w.b.Rescue(again, 0)
	require.Equal(t, store.TaskQueued, again.Status)
	w.b.Rescue(spent, 1)
	require.Equal(t, store.TaskFailed, spent.Status)
	require.Equal(t, "lease expired", spent.Err)
	require.Equal(t, store.RunFailed, w.run.Status)
	require.Equal(t, []string{"a RESCUED", "b FAILED"}, types(w.b.Log()))
}

func TestTimeOutAndCancelEndARunOnce(t *testing.T) {
	w := newWorld(1, running("a", store.KindStep))
	require.True(t, w.b.TimeOut(w.run, 3))
	require.False(t, w.b.TimeOut(w.run, 4))
	require.False(t, w.b.CancelRun(w.run))
	require.Equal(t, transition.EndTimedOut, w.run.End)
	require.Equal(t, 3, w.run.EndSrc)
	require.Equal(t, store.DeadlineStep, w.run.Failure.Step)
	require.Equal(t, store.TimedOut(time.Minute), w.run.Failure.Message)
	require.Equal(t, []string{store.DeadlineStep + " FAILED"}, types(w.b.Log()))
}

func TestSignals(t *testing.T) {
	wait := running("sig", store.KindSignal)
	w := newWorld(1, wait)
	require.False(t, w.b.Signal(wait, []byte(`"early"`)), "held until it waits")
	require.True(t, wait.Held)
	out := w.apply(0, "sig", store.TaskResult{Outcome: store.OutcomeAwait, Delay: time.Hour})
	require.Equal(t, store.OutcomeAwait, out.Outcome)
	require.True(t, wait.Consume, "the held signal completes the wait at once")
	require.Equal(t, store.TaskCompleted, wait.Status)
	require.Equal(t, store.RunCompleted, w.run.Status)

	late := running("sig", store.KindSignal)
	w = newWorld(1, late)
	w.apply(0, "sig", store.TaskResult{Outcome: store.OutcomeAwait, Delay: time.Hour, Reason: "no signal"})
	require.Equal(t, store.TaskAwaiting, late.Status)
	require.Equal(t, transition.TimerSignal, late.Timer)
	require.True(t, w.b.Signal(late, []byte(`"ok"`)))
	require.Equal(t, []byte(`"ok"`), late.Output)
	require.Empty(t, late.Timer)
	require.Equal(t, []string{"sig AWAITING", "sig SIGNALLED", "sig COMPLETED"}, types(w.b.Log()))
}

func TestMappedTaskAdmitsElementsAndCollects(t *testing.T) {
	m := running("m", store.KindMap)
	w := newWorld(1, m)
	out := w.apply(0, "m", store.TaskResult{Outcome: store.OutcomeMapped, Elements: [][]byte{[]byte(`1`), []byte(`2`), []byte(`3`)}, Limit: 2, Each: "p"})
	require.Equal(t, store.OutcomeMapped, out.Outcome)
	require.Equal(t, store.TaskMapping, m.Status)
	require.Len(t, w.b.Mapped, 1)
	require.Equal(t, 2, w.b.Mapped[0].Admitted, "the limit")
	require.False(t, w.b.Mapped[0].Again)

	for i := range 3 {
		name := store.ElementName("m", i)
		w.tasks[name] = &transition.Task{Run: w.run, Name: name, Kind: store.KindElement, Status: store.TaskRunning, Attempt: 1}
	}
	w.b = transition.New(now, func(_ *transition.Run, name string) *transition.Task { return w.tasks[name] })
	w.apply(0, store.ElementName("m", 0), store.TaskResult{Outcome: store.OutcomeCompleted, Output: []byte(`10`)})
	require.Equal(t, []transition.QueuedElement{{Run: w.run, Name: store.ElementName("m", 2), Src: 0}}, w.b.Admitted)
	w.apply(1, store.ElementName("m", 1), store.TaskResult{Outcome: store.OutcomeCompleted, Output: []byte(`20`)})
	w.apply(2, store.ElementName("m", 2), store.TaskResult{Outcome: store.OutcomeCompleted, Output: []byte(`30`)})
	require.Equal(t, []transition.Source{{Task: m, Src: 2}}, w.b.Collect, "the last element collects")
	require.Equal(t, 1, w.run.Pending, "elements count toward their mapped task")
	w.b.Complete(w.b.Collect[0], [][]byte{[]byte(`10`), []byte(`20`), []byte(`30`)})
	require.Equal(t, store.TaskCompleted, m.Status)
	require.JSONEq(t, `[10,20,30]`, string(m.Output))
	require.Equal(t, store.RunCompleted, w.run.Status)
}
