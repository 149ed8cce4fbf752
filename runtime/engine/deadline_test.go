package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// Run deadlines at the engine level: what a run's deadline (timeout= on the
// workflow, or WithTimeout on the trigger) does to a run whose tasks are
// sleeping, backing off, running on workers, or already done. The store's
// own conformance tests (storetest) cover the transitions; these show what
// a workflow author sees: the run's result, the error Wait returns, the
// onfailure handler's call, the steps' contexts and the event log.

// deadlineHandler is an onfailure handler that counts its calls and keeps
// the failures and inputs it was called with. Handlers of several workers
// may share one.
type deadlineHandler struct {
	calls    atomic.Int64
	mu       sync.Mutex
	failures []dag.Failure
	inputs   []int
}

func (h *deadlineHandler) handle(_ context.Context, in engine.StepInput, f dag.Failure) error {
	h.calls.Add(1)
	v, err := engine.Input[int](in)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures = append(h.failures, f)
	h.inputs = append(h.inputs, v)
	return err
}

// requireCalledWith checks that the handler was called exactly once, for
// the run's input, with want.
func (h *deadlineHandler) requireCalledWith(t *testing.T, want dag.Failure, input int) {
	t.Helper()
	require.Equal(t, int64(1), h.calls.Load(), "the onfailure handler runs exactly once")
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Equal(t, []dag.Failure{want}, h.failures)
	require.True(t, h.failures[0].TimedOut())
	require.Equal(t, []int{input}, h.inputs)
}

// deadlineCounter is a step function that counts its calls and succeeds.
func deadlineCounter(n *atomic.Int64, out string) func(context.Context, engine.StepInput) ([]byte, error) {
	return fn(func(context.Context, int, []string) (string, error) { n.Add(1); return out, nil })
}

// deadlineSleep is a sleep step's function that sleeps d.
func deadlineSleep(d time.Duration) func(context.Context, engine.StepInput) (engine.Wake, error) {
	return func(context.Context, engine.StepInput) (engine.Wake, error) { return engine.Wake{Delay: d}, nil }
}

// requireTimedOutErr checks what Wait returned for a run that timed out
// after d: a *RunError matching ErrRunFailed whose failure is the deadline's
// and whose message names the timeout, and a FAILED result with that
// failure. It returns the failure every caller should see.
func requireTimedOutErr(t *testing.T, id dag.RunID, res *engine.RunResult, err error, d string) dag.Failure {
	t.Helper()
	want := dag.Failure{RunID: id, Step: dag.DeadlineStep, Message: "timed out after " + d}
	require.Error(t, err)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	require.NotErrorIs(t, err, engine.ErrRunCancelled)
	var re *engine.RunError
	require.ErrorAs(t, err, &re)
	require.Equal(t, id, re.RunID)
	require.Equal(t, store.RunFailed, re.Status)
	require.NotNil(t, re.Failure)
	require.Equal(t, want, *re.Failure)
	require.True(t, re.Failure.TimedOut())
	require.Equal(t, "run timed out after "+d, re.Failure.Error())
	require.Contains(t, err.Error(), "timed out after "+d)
	require.Equal(t, fmt.Sprintf("run %s FAILED: run timed out after %s", id, d), err.Error())

	require.NotNil(t, res, "Wait returns the result with the error")
	require.Equal(t, store.RunFailed, res.Status)
	require.NotNil(t, res.Failure)
	require.Equal(t, want, *res.Failure)
	require.True(t, res.Failure.TimedOut())
	return want
}

// requireDeadlineEvents checks that the run's event log holds exactly one
// @deadline event, FAILED with "timed out after d", followed by a
// CANCELLED event for each of cancelled, in that order, then the onfailure
// task's QUEUED (when the workflow has a handler). It returns the
// @deadline event.
func requireDeadlineEvents(t *testing.T, events []store.Event, d string, onFailure bool, cancelled ...string) store.Event {
	t.Helper()
	at := -1
	for i, ev := range events {
		if ev.Step == dag.DeadlineStep {
			require.Equal(t, -1, at, "one @deadline event: %v", events)
			at = i
		}
	}
	require.NotEqual(t, -1, at, "an @deadline event is logged: %v", events)
	dl := events[at]
	require.Equal(t, store.EventFailed, dl.Type)
	require.Equal(t, "timed out after "+d, dl.Detail)

	type ev struct {
		Step string
		Type store.EventType
	}
	var want []ev
	for _, s := range cancelled {
		want = append(want, ev{s, store.EventCancelled})
	}
	if onFailure {
		want = append(want, ev{engine.OnFailureStep, store.EventQueued})
	}
	var got []ev
	for _, e := range events[at+1:] {
		if len(got) == len(want) {
			break
		}
		got = append(got, ev{e.Step, e.Type})
	}
	require.Equal(t, want, got, "the deadline cancels the unfinished tasks in task order, then queues the onfailure task: %v", events)
	return dl
}

// stepEvents returns the types of a step's events, in order.
func stepEvents(events []store.Event, step string) []store.EventType {
	var types []store.EventType
	for _, ev := range events {
		if ev.Step == step {
			types = append(types, ev.Type)
		}
	}
	return types
}

// TestDeadlineHitsSleepingTask: the deadline (48h) comes while a step
// sleeps (72h): the run fails timed out, the sleep and the step after it
// are cancelled, the sleep never wakes, and the onfailure handler runs once.
func TestDeadlineHitsSleepingTask(t *testing.T) {
	ctx := context.Background()
	var runsA, runsB atomic.Int64
	var handler deadlineHandler
	def := &engine.Definition{
		Name: "deadline-sleep",
		Steps: []engine.Step{
			{Name: "A", Run: deadlineCounter(&runsA, "a")},
			{Name: "Nap", Kind: engine.KindSleep, Parents: req("A"), Sleep: deadlineSleep(72 * time.Hour)},
			{Name: "B", Parents: req("Nap"), Run: deadlineCounter(&runsB, "b")},
		},
		OnFailure: handler.handle,
		Timeout:   48 * time.Hour,
	}
	h := newHarness(t, def)
	id, err := h.Engine.Trigger(ctx, "deadline-sleep", "t", 7)
	require.NoError(t, err)
	h.RunUntilIdle(ctx)

	mid, err := h.Engine.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, mid.Status)
	require.Equal(t, store.TaskSleeping, mid.Tasks["Nap"].Status)
	next, ok := h.NextTimer(ctx)
	require.True(t, ok)
	require.Equal(t, dagtest.Epoch.Add(48*time.Hour), next, "the deadline is the next timer, before the sleep's wake")

	h.Advance(ctx, 48*time.Hour-time.Second)
	mid, err = h.Engine.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, mid.Status, "not yet at the deadline")
	require.Zero(t, handler.calls.Load())

	h.Advance(ctx, time.Second)
	res, err := h.Engine.Wait(ctx, id)
	want := requireTimedOutErr(t, id, res, err, "48h")
	require.Equal(t, map[string]store.TaskStatus{
		"A": store.TaskCompleted, "Nap": store.TaskCancelled, "B": store.TaskCancelled,
		engine.OnFailureStep: store.TaskCompleted,
	}, statuses(res))
	require.Equal(t, dagtest.Epoch.Add(48*time.Hour), res.Tasks["Nap"].Finished)
	handler.requireCalledWith(t, want, 7)

	// The sleep's timer went with the run: past its wake nothing happens.
	_, pending := h.NextTimer(ctx)
	require.False(t, pending, "no timer of the run is left")
	h.Advance(ctx, 48*time.Hour)
	after, err := h.Engine.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, statuses(res), statuses(after))
	require.Equal(t, int64(1), runsA.Load())
	require.Zero(t, runsB.Load(), "B never runs")
	require.Equal(t, int64(1), handler.calls.Load())

	events, err := h.Store.ListEvents(ctx, id)
	require.NoError(t, err)
	dl := requireDeadlineEvents(t, events, "48h", true, "Nap", "B")
	require.Equal(t, dagtest.Epoch.Add(48*time.Hour), dl.At)
	require.Equal(t, []store.EventType{store.EventQueued, store.EventStarted, store.EventSleeping, store.EventCancelled},
		stepEvents(events, "Nap"), "the sleep never wakes")
	require.Equal(t, []store.EventType{store.EventCancelled}, stepEvents(events, "B"))
}

// TestDeadlineHitsTaskInBackoff: the deadline (48h) comes while a failed
// step waits out its retry's backoff (72h): the step is cancelled and never
// retried, its child is cancelled, and the onfailure handler runs once.
func TestDeadlineHitsTaskInBackoff(t *testing.T) {
	ctx := context.Background()
	var runsA, runsB atomic.Int64
	var handler deadlineHandler
	def := &engine.Definition{
		Name: "deadline-backoff",
		Steps: []engine.Step{
			{Name: "A", Retry: engine.RetryPolicy{MaxRetries: 3, Backoff: 72 * time.Hour},
				Run: fn(func(context.Context, int, []string) (string, error) {
					runsA.Add(1)
					return "", errors.New("flaky")
				})},
			{Name: "B", Parents: req("A"), Run: deadlineCounter(&runsB, "b")},
		},
		OnFailure: handler.handle,
		Timeout:   48 * time.Hour,
	}
	h := newHarness(t, def)
	id, err := h.Engine.Trigger(ctx, "deadline-backoff", "t", 3)
	require.NoError(t, err)
	h.RunUntilIdle(ctx)

	mid, err := h.Engine.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, mid.Status)
	require.Equal(t, store.TaskBackoff, mid.Tasks["A"].Status)
	require.Equal(t, dagtest.Epoch.Add(72*time.Hour), mid.Tasks["A"].WakeAt)
	require.Equal(t, int64(1), runsA.Load())

	require.True(t, h.AdvanceToNextTimer(ctx), "the deadline is a timer")
	require.Equal(t, dagtest.Epoch.Add(48*time.Hour), h.Clock.Now(), "the deadline comes before the retry")
	res, err := h.Engine.Wait(ctx, id)
	want := requireTimedOutErr(t, id, res, err, "48h")
	require.Equal(t, map[string]store.TaskStatus{
		"A": store.TaskCancelled, "B": store.TaskCancelled, engine.OnFailureStep: store.TaskCompleted,
	}, statuses(res))
	handler.requireCalledWith(t, want, 3)

	_, pending := h.NextTimer(ctx)
	require.False(t, pending, "the retry's timer went with the run")
	h.Advance(ctx, 72*time.Hour)
	require.Equal(t, int64(1), runsA.Load(), "A's function ran exactly once: the retry never comes")
	require.Zero(t, runsB.Load())
	require.Equal(t, int64(1), handler.calls.Load())
	after, err := h.Engine.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, statuses(res), statuses(after))

	events, err := h.Store.ListEvents(ctx, id)
	require.NoError(t, err)
	requireDeadlineEvents(t, events, "48h", true, "A", "B")
	require.Equal(t, []store.EventType{store.EventQueued, store.EventStarted, store.EventRetrying, store.EventCancelled},
		stepEvents(events, "A"))
}

// TestDeadlineHitsRunningTasks: a run with a trigger's timeout (its
// definition has none) fans out to two steps that block until their ctx is
// done, each on its own worker (both workers execute one task at a time).
// At the deadline the run fails timed out, both steps' contexts are
// cancelled wherever they run, their late results are dropped (they are
// neither retried nor failed), the step after them never runs, and the
// onfailure handler runs once.
func TestDeadlineHitsRunningTasks(t *testing.T) {
	eachStore(t, testDeadlineHitsRunningTasks)
}

func testDeadlineHitsRunningTasks(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Long enough for both steps to start on a busy machine before it, and
	// well short of the test's patience.
	const timeout = time.Second
	type seen struct {
		worker     int
		err, cause error
	}
	var (
		mu      sync.Mutex
		startOn = map[string][]int{} // step -> workers it started on
		saw     = map[string][]seen{}
	)
	started := make(chan string, 8)
	sawCancel := make(chan string, 8)
	var runsAfter atomic.Int64
	var handler deadlineHandler
	mk := func(w int) *engine.Definition {
		block := func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			info, _ := dag.Info(ctx)
			mu.Lock()
			startOn[info.Step] = append(startOn[info.Step], w)
			mu.Unlock()
			started <- info.Step
			<-ctx.Done()
			mu.Lock()
			saw[info.Step] = append(saw[info.Step], seen{w, ctx.Err(), context.Cause(ctx)})
			mu.Unlock()
			sawCancel <- info.Step
			return nil, ctx.Err() // a late result: the run is over
		}
		// A retry policy, so that a late result taken for a failure would
		// show as a retry.
		retry := engine.RetryPolicy{MaxRetries: 2, Backoff: time.Millisecond}
		return &engine.Definition{
			Name: "deadline-fanout",
			Steps: []engine.Step{
				{Name: "left", Retry: retry, Run: block},
				{Name: "right", Retry: retry, Run: block},
				{Name: "after", Parents: req("left", "right"), Run: deadlineCounter(&runsAfter, "after")},
			},
			OnFailure: handler.handle,
		}
	}
	var workers [2]*engine.Engine
	for w := range workers {
		workers[w] = deadlineWorker(t, open(), fmt.Sprintf("deadline-%d", w), mk(w))
	}

	id, err := workers[0].Trigger(ctx, "deadline-fanout", "t", 5, engine.WithTimeout(timeout))
	require.NoError(t, err)
	for range 2 {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the steps never started")
		}
	}
	mu.Lock()
	require.Len(t, startOn["left"], 1)
	require.Len(t, startOn["right"], 1)
	require.NotEqual(t, startOn["left"][0], startOn["right"][0], "one step on each worker: each runs one task at a time")
	mu.Unlock()

	res, err := workers[0].Wait(ctx, id)
	want := requireTimedOutErr(t, id, res, err, store.ShortDuration(timeout))

	// Generous waits for things to happen, no thresholds.
	for range 2 {
		select {
		case <-sawCancel:
		case <-time.After(10 * time.Second):
			t.Fatal("a running step's ctx was not cancelled by the deadline")
		}
	}
	mu.Lock()
	for _, step := range []string{"left", "right"} {
		require.Len(t, saw[step], 1, step)
		s := saw[step][0]
		require.Equal(t, startOn[step][0], s.worker, step)
		require.ErrorIs(t, s.err, context.Canceled, "%s saw a cancellation, not a step timeout", step)
		require.Error(t, s.cause, step)
		t.Logf("%s on worker %d: ctx.Err() = %v, context.Cause = %v", step, s.worker, s.err, s.cause)
	}
	mu.Unlock()

	// The handler runs once, on either worker.
	require.Eventually(t, func() bool {
		r, err := workers[0].Result(ctx, id)
		return err == nil && r.Tasks[engine.OnFailureStep].Status.Terminal()
	}, 10*time.Second, 10*time.Millisecond, "the onfailure task finishes")

	// Stopping the workers stores whatever results they hold: the late
	// results of the cancelled steps, which must change nothing.
	for _, w := range workers {
		stop, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(t, w.Stop(stop))
		cancelStop()
	}
	handler.requireCalledWith(t, want, 5)
	require.Zero(t, runsAfter.Load(), "the step after the cancelled ones never runs")

	st := open()
	final, err := engine.New(st, &engine.Config{Manual: true})
	require.NoError(t, err)
	require.NoError(t, final.Register(mk(0)))
	res, err = final.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunFailed, res.Status)
	require.Equal(t, want, *res.Failure)
	require.Equal(t, map[string]store.TaskStatus{
		"left": store.TaskCancelled, "right": store.TaskCancelled, "after": store.TaskCancelled,
		engine.OnFailureStep: store.TaskCompleted,
	}, statuses(res), "late results are stale: the cancelled steps stay cancelled")

	events, err := st.ListEvents(ctx, id)
	require.NoError(t, err)
	requireDeadlineEvents(t, events, store.ShortDuration(timeout), true, "left", "right", "after")
	for _, step := range []string{"left", "right"} {
		types := stepEvents(events, step)
		require.Equal(t, store.EventCancelled, types[len(types)-1], "%s: %v", step, types)
		require.NotContains(t, types, store.EventFailed, step)
		require.NotContains(t, types, store.EventRetrying, step)
		require.NotContains(t, types, store.EventCompleted, step)
		n := 0
		for _, ty := range types {
			if ty == store.EventStarted {
				n++
			}
		}
		require.Equal(t, 1, n, "%s started once: %v", step, types)
	}
	require.Equal(t, []store.EventType{store.EventCancelled}, stepEvents(events, "after"))
	require.Equal(t, []store.EventType{store.EventQueued, store.EventStarted, store.EventCompleted},
		stepEvents(events, engine.OnFailureStep))
}

// deadlineWorker starts an engine named id over st, like worker, but
// executing one task at a time.
func deadlineWorker(t *testing.T, st store.Store, id string, def *engine.Definition) *engine.Engine {
	t.Helper()
	e, err := engine.New(st, &engine.Config{
		WorkerID: id, Concurrency: 1, PollInterval: 5 * time.Millisecond,
		Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = e.Stop(ctx) // ErrNotStarted when the test stopped it
	})
	return e
}

// TestDeadlineAfterCompletion: a run that completes before its deadline is
// COMPLETED, and stays so when the clock passes the deadline: the deadline
// timer went with the run, and the onfailure handler is not called.
func TestDeadlineAfterCompletion(t *testing.T) {
	ctx := context.Background()
	var runsA, runsB atomic.Int64
	var handler deadlineHandler
	def := &engine.Definition{
		Name: "deadline-done",
		Steps: []engine.Step{
			{Name: "A", Run: deadlineCounter(&runsA, "a")},
			{Name: "Nap", Kind: engine.KindSleep, Parents: req("A"), Sleep: deadlineSleep(time.Hour)},
			{Name: "B", Parents: req("Nap"), Run: deadlineCounter(&runsB, "b")},
		},
		OnFailure: handler.handle,
		Timeout:   48 * time.Hour,
	}
	h := newHarness(t, def)
	id, err := h.Engine.Trigger(ctx, "deadline-done", "t", 1)
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	h.Advance(ctx, time.Hour)
	res, err := h.Engine.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	require.Nil(t, res.Failure)

	_, pending := h.NextTimer(ctx)
	require.False(t, pending, "the deadline timer went with the finished run")
	h.Advance(ctx, 48*time.Hour)
	h.Advance(ctx, 48*time.Hour)
	after, err := h.Engine.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, after.Status)
	require.Nil(t, after.Failure)
	require.Equal(t, map[string]store.TaskStatus{
		"A": store.TaskCompleted, "Nap": store.TaskCompleted, "B": store.TaskCompleted,
		engine.OnFailureStep: store.TaskPending,
	}, statuses(after))
	require.Equal(t, "b", output(t, after, "B"))
	require.Zero(t, handler.calls.Load(), "onfailure is not called")
	require.Equal(t, int64(1), runsA.Load())
	require.Equal(t, int64(1), runsB.Load())

	events, err := h.Store.ListEvents(ctx, id)
	require.NoError(t, err)
	for _, ev := range events {
		require.NotEqual(t, dag.DeadlineStep, ev.Step, "no @deadline event: %v", events)
		require.NotEqual(t, store.EventCancelled, ev.Type, "nothing cancelled: %v", events)
	}
}

// TestDeadlineTriggerOverridesDefinition: a trigger's WithTimeout takes the
// place of the definition's Timeout, and the failure's message formats the
// timeout that applied.
func TestDeadlineTriggerOverridesDefinition(t *testing.T) {
	for _, tc := range []struct {
		name     string
		def      time.Duration // Definition.Timeout
		trigger  time.Duration // WithTimeout, 0 for none
		deadline time.Duration // the one that applies
		message  string
	}{
		{"trigger longer than definition", time.Hour, 2 * time.Hour, 2 * time.Hour, "timed out after 2h"},
		{"trigger shorter than definition", 2 * time.Hour, 90 * time.Minute, 90 * time.Minute, "timed out after 1h30m"},
		{"trigger without definition timeout", 0, 90 * time.Second, 90 * time.Second, "timed out after 1m30s"},
		{"definition alone", time.Hour, 0, time.Hour, "timed out after 1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var runsB atomic.Int64
			var handler deadlineHandler
			def := &engine.Definition{
				Name: "deadline-override",
				Steps: []engine.Step{
					{Name: "Nap", Kind: engine.KindSleep, Sleep: deadlineSleep(72 * time.Hour)},
					{Name: "B", Parents: req("Nap"), Run: deadlineCounter(&runsB, "b")},
				},
				OnFailure: handler.handle,
				Timeout:   tc.def,
			}
			h := newHarness(t, def)
			var opts []engine.TriggerOption
			if tc.trigger != 0 {
				opts = append(opts, engine.WithTimeout(tc.trigger))
			}
			id, err := h.Engine.Trigger(ctx, "deadline-override", "t", 2, opts...)
			require.NoError(t, err)
			h.RunUntilIdle(ctx)
			next, ok := h.NextTimer(ctx)
			require.True(t, ok)
			require.Equal(t, dagtest.Epoch.Add(tc.deadline), next, "the deadline applied is the next timer")

			// Past the other timeout (when it is shorter), short of this one.
			if tc.def > 0 && tc.def < tc.deadline {
				h.Advance(ctx, tc.def)
				h.Advance(ctx, (tc.deadline-tc.def)/2)
			} else {
				h.Advance(ctx, tc.deadline-time.Second)
			}
			mid, err := h.Engine.Result(ctx, id)
			require.NoError(t, err)
			require.Equal(t, store.RunRunning, mid.Status, "not failed before the deadline that applies")
			require.Nil(t, mid.Failure)
			require.Equal(t, store.TaskSleeping, mid.Tasks["Nap"].Status)
			require.Zero(t, handler.calls.Load())

			h.Clock.Set(dagtest.Epoch.Add(tc.deadline))
			h.RunUntilIdle(ctx)
			res, err := h.Engine.Wait(ctx, id)
			want := requireTimedOutErr(t, id, res, err, tc.message[len("timed out after "):])
			require.Equal(t, tc.message, res.Failure.Message)
			require.Equal(t, store.TimedOut(tc.deadline), res.Failure.Message)
			require.Equal(t, map[string]store.TaskStatus{
				"Nap": store.TaskCancelled, "B": store.TaskCancelled, engine.OnFailureStep: store.TaskCompleted,
			}, statuses(res))
			handler.requireCalledWith(t, want, 2)
			require.Zero(t, runsB.Load())

			events, err := h.Store.ListEvents(ctx, id)
			require.NoError(t, err)
			requireDeadlineEvents(t, events, tc.message[len("timed out after "):], true, "Nap", "B")
		})
	}
}

// TestDeadlineInvalidSettings: a negative trigger timeout fails the trigger
// and starts nothing; Validate and Register reject a negative Timeout, a
// negative Concurrency and a ConcurrencyKey without Concurrency, saying
// what is wrong.
func TestDeadlineInvalidSettings(t *testing.T) {
	ctx := context.Background()
	steps := func() []engine.Step {
		return []engine.Step{{Name: "A", Run: fn(func(context.Context, int, []string) (string, error) { return "a", nil })}}
	}

	t.Run("negative trigger timeout", func(t *testing.T) {
		h := newHarness(t, &engine.Definition{Name: "deadline-neg", Steps: steps(), Timeout: time.Hour})
		_, err := h.Engine.Trigger(ctx, "deadline-neg", "t", 0, engine.WithTimeout(-time.Second))
		require.Error(t, err)
		require.Contains(t, err.Error(), `trigger "deadline-neg"`)
		require.Contains(t, err.Error(), "negative timeout -1s")
		require.Contains(t, err.Error(), "want a duration above zero, or 0 for the workflow's")

		// One bad request of many fails the call before anything is written.
		_, err = h.Engine.TriggerMany(ctx, []engine.TriggerRequest{
			{Workflow: "deadline-neg", Tenant: "t", Input: 1},
			{Workflow: "deadline-neg", Tenant: "t", Input: 2, Timeout: -time.Hour},
		})
		require.Error(t, err)
		require.Contains(t, err.Error(), "negative timeout -1h")
		require.Zero(t, h.RunUntilIdle(ctx), "no run was created")
		_, pending := h.NextTimer(ctx)
		require.False(t, pending, "no deadline was armed")
	})

	for _, tc := range []struct {
		name string
		set  func(d *engine.Definition)
		want []string // substrings of the error
	}{
		{"negative timeout", func(d *engine.Definition) { d.Timeout = -time.Hour },
			[]string{"negative timeout -1h"}},
		{"negative concurrency", func(d *engine.Definition) { d.Concurrency = -1 },
			[]string{"concurrency -1", "want 1 to", "or 0 for no cap"}},
		{"concurrency beyond int32", func(d *engine.Definition) { d.Concurrency = math.MaxInt32 + 1 },
			[]string{fmt.Sprintf("concurrency %d", int64(math.MaxInt32)+1), "want 1 to"}},
		{"concurrency key without concurrency", func(d *engine.Definition) {
			d.ConcurrencyKey = func([]byte) (string, error) { return "k", nil }
		}, []string{"ConcurrencyKey without Concurrency", "set Concurrency"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := &engine.Definition{Name: "deadline-bad", Steps: steps()}
			tc.set(def)
			err := def.Validate()
			require.ErrorIs(t, err, engine.ErrInvalidDefinition)
			require.Contains(t, err.Error(), `workflow "deadline-bad"`)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}

			e, err := engine.New(memstore.New(nil), &engine.Config{Manual: true})
			require.NoError(t, err)
			err = e.Register(def)
			require.ErrorIs(t, err, engine.ErrInvalidDefinition, "Register validates")
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			_, err = e.Trigger(ctx, "deadline-bad", "t", 0)
			require.ErrorIs(t, err, engine.ErrUnknownWorkflow, "nothing was registered")
		})
	}

	t.Run("all problems at once", func(t *testing.T) {
		def := &engine.Definition{Name: "deadline-bad", Steps: steps(), Timeout: -time.Minute, Concurrency: -2}
		err := def.Validate()
		require.ErrorIs(t, err, engine.ErrInvalidDefinition)
		require.Contains(t, err.Error(), "negative timeout -1m")
		require.Contains(t, err.Error(), "concurrency -2")
	})

	t.Run("valid settings", func(t *testing.T) {
		def := &engine.Definition{Name: "deadline-ok", Steps: steps(), Timeout: time.Hour, Concurrency: 2,
			ConcurrencyKey: func([]byte) (string, error) { return "k", nil }}
		require.NoError(t, def.Validate())
	})
}

// TestDeadlineHitsQueuedRun: a run QUEUED behind its workflow's
// concurrency cap times out at its deadline, counted from its trigger,
// without ever starting: its steps are cancelled, its onfailure handler
// runs once all the same, and the run holding the cap is untouched.
func TestDeadlineHitsQueuedRun(t *testing.T) {
	ctx := context.Background()
	var runsA, runsB atomic.Int64
	var handler deadlineHandler
	def := &engine.Definition{
		Name: "deadline-queued",
		Steps: []engine.Step{
			{Name: "A", Run: deadlineCounter(&runsA, "a")},
			{Name: "Nap", Kind: engine.KindSleep, Parents: req("A"), Sleep: deadlineSleep(72 * time.Hour)},
			{Name: "B", Parents: req("Nap"), Run: deadlineCounter(&runsB, "b")},
		},
		OnFailure:   handler.handle,
		Concurrency: 1,
	}
	h := newHarness(t, def)
	holder, err := h.Engine.Trigger(ctx, "deadline-queued", "t", 1, engine.WithTimeout(100*time.Hour))
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	h.Clock.Advance(time.Hour)
	waiting, err := h.Engine.Trigger(ctx, "deadline-queued", "t", 2, engine.WithTimeout(48*time.Hour))
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	mid, err := h.Engine.Result(ctx, waiting)
	require.NoError(t, err)
	require.Equal(t, store.RunQueued, mid.Status)
	require.Equal(t, int64(1), runsA.Load(), "only the holder's A ran")

	require.True(t, h.AdvanceToNextTimer(ctx))
	require.Equal(t, dagtest.Epoch.Add(49*time.Hour), h.Clock.Now(), "the deadline counts from the trigger")
	res, err := h.Engine.Wait(ctx, waiting)
	want := requireTimedOutErr(t, waiting, res, err, "48h")
	require.Equal(t, map[string]store.TaskStatus{
		"A": store.TaskCancelled, "Nap": store.TaskCancelled, "B": store.TaskCancelled,
		engine.OnFailureStep: store.TaskCompleted,
	}, statuses(res))
	handler.requireCalledWith(t, want, 2)
	require.Equal(t, int64(1), runsA.Load(), "the queued run never started")

	held, err := h.Engine.Result(ctx, holder)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, held.Status, "the run holding the cap goes on")
	require.Equal(t, store.TaskSleeping, held.Tasks["Nap"].Status)

	events, err := h.Store.ListEvents(ctx, waiting)
	require.NoError(t, err)
	requireDeadlineEvents(t, events, "48h", true, "A", "Nap", "B")
}

// TestDeadlineAfterStepFailure: a run that fails for good before its
// deadline keeps its step's failure when the clock passes the deadline,
// and its onfailure handler is not called a second time.
func TestDeadlineAfterStepFailure(t *testing.T) {
	ctx := context.Background()
	var handler deadlineHandler
	def := &engine.Definition{
		Name: "deadline-failed",
		Steps: []engine.Step{
			{Name: "A", Run: fn(func(context.Context, int, []string) (string, error) {
				return "", errors.New("broken")
			})},
		},
		OnFailure: handler.handle,
		Timeout:   time.Hour,
	}
	h := newHarness(t, def)
	id, err := h.Engine.Trigger(ctx, "deadline-failed", "t", 4)
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	h.Advance(ctx, 2*time.Hour)
	res, err := h.Engine.Wait(ctx, id)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	want := dag.Failure{RunID: id, Step: "A", Attempt: 1, Message: "broken"}
	require.Equal(t, want, *res.Failure)
	require.False(t, res.Failure.TimedOut())
	require.Equal(t, int64(1), handler.calls.Load())
	require.Equal(t, []dag.Failure{want}, handler.failures)
	events, err := h.Store.ListEvents(ctx, id)
	require.NoError(t, err)
	for _, ev := range events {
		require.NotEqual(t, dag.DeadlineStep, ev.Step, "no @deadline event: %v", events)
	}
}
