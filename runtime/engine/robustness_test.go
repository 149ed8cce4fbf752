package engine_test

import (
	"context"
	"errors"
	"fmt"
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

func TestStaleAttemptIsRejected(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	def := &engine.Definition{Name: "fence", Steps: []engine.Step{
		{Name: "s", Run: rec.step("s"), Retry: engine.RetryPolicy{MaxRetries: 3}},
	}}
	h := newHarness(t, def)
	id, err := h.Engine.Trigger(ctx, "fence", "t", 0)
	require.NoError(t, err)

	// Worker A claims attempt 1 with a short lease, and goes quiet.
	first, err := h.Store.ClaimTasks(ctx, store.ClaimParams{Worker: "A", Limit: 1, Lease: time.Second})
	require.NoError(t, err)
	require.Len(t, first, 1)
	require.Equal(t, 1, first[0].Attempt)

	// The lease ends; the task is rescued and worker B runs attempt 2.
	h.Clock.Advance(2 * time.Second)
	h.RunUntilIdle(ctx)
	res, err := h.Engine.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 2, res.Tasks["s"].Attempt)

	// A wakes up and reports attempt 1: the store refuses it.
	outs, err := h.Store.CompleteTasks(ctx, []store.TaskResult{{
		RunID: id, Step: "s", Attempt: 1, Claim: first[0].Claim, Outcome: store.OutcomeFailed, Error: "late",
	}})
	require.NoError(t, err)
	require.Equal(t, store.OutcomeStale, outs[0].Outcome)
	after, err := h.Engine.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.TaskCompleted, after.Tasks["s"].Status)
	require.Equal(t, "s(0;)", output(t, after, "s"))
}

func TestReleasedAttemptIsNotARetry(t *testing.T) {
	// With one retry, attempt 2 is the step's first failure only if the
	// released attempt 1 does not count: it is retried rather than failed.
	// With three, the retry waits the first backoff (one second), not the
	// second (two).
	for _, maxRetries := range []int{1, 3} {
		t.Run(fmt.Sprintf("MaxRetries=%d", maxRetries), func(t *testing.T) {
			testReleasedAttemptIsNotARetry(t, maxRetries)
		})
	}
}

func testReleasedAttemptIsNotARetry(t *testing.T, maxRetries int) {
	ctx := context.Background()
	var attempts []int
	def := &engine.Definition{Name: "released", Steps: []engine.Step{
		{Name: "s", Retry: engine.RetryPolicy{MaxRetries: maxRetries, Backoff: time.Second}, Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			info, _ := dag.Info(ctx)
			attempts = append(attempts, info.Attempt)
			if info.Attempt == 2 {
				return nil, errors.New("flaky")
			}
			return engine.Encode("ok")
		}},
	}}
	h := newHarness(t, def)
	id, err := h.Engine.Trigger(ctx, "released", "t", 0)
	require.NoError(t, err)

	// A worker claims attempt 1 and is stopped before it finishes: it
	// releases the task.
	claimed, err := h.Store.ClaimTasks(ctx, store.ClaimParams{Worker: "stopping", Signatures: []string{def.Signatures()["s"]}, Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	n, err := h.Store.RetireWorker(ctx, "stopping", true)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Attempt 2 fails: the step's first failure, retried after the first
	// backoff.
	_, err = h.Engine.Wait(ctx, id)
	require.ErrorIs(t, err, engine.ErrRunBlocked, "the failed attempt waits out its backoff")
	waiting, err := h.Engine.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, h.Clock.Now().Add(time.Second), waiting.Tasks["s"].WakeAt, "the released attempt counted toward the backoff")
	h.Clock.Advance(time.Minute)
	res, err := h.Engine.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []int{2, 3}, attempts)
	require.Equal(t, "ok", func() string { v, _ := engine.Output[string](res, "s"); return v }())
}

// startEngine returns a started engine over st, stopped at cleanup.
func startEngine(t *testing.T, st store.Store, defs ...*engine.Definition) *engine.Engine {
	t.Helper()
	e, err := engine.New(st, &engine.Config{Concurrency: 8, PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	for _, d := range defs {
		require.NoError(t, e.Register(d))
	}
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e
}

func TestCancelReachesRunningStep(t *testing.T) {
	eachStore(t, testCancelReachesRunningStep)
}

func testCancelReachesRunningStep(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	started := make(chan struct{})
	sawCancel := make(chan error, 1)
	rec := &recorder{}
	def := &engine.Definition{Name: "cancel", Steps: []engine.Step{
		{Name: "block", Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			close(started)
			<-ctx.Done()
			sawCancel <- ctx.Err()
			return nil, ctx.Err()
		}},
		{Name: "after", Parents: req("block"), Run: rec.step("after")},
	}}
	e := startEngine(t, open(), def)
	id, err := e.Trigger(ctx, "cancel", "t", 0)
	require.NoError(t, err)
	<-started
	ok, err := e.Cancel(ctx, id)
	require.NoError(t, err)
	require.True(t, ok)
	require.ErrorIs(t, <-sawCancel, context.Canceled)
	res, err := e.Wait(ctx, id)
	require.ErrorIs(t, err, engine.ErrRunCancelled)
	require.Equal(t, store.RunCancelled, res.Status)
	require.Equal(t, store.TaskCancelled, res.Tasks["block"].Status)
	require.Equal(t, store.TaskCancelled, res.Tasks["after"].Status)
	require.Empty(t, rec.ran())

	ok, err = e.Cancel(ctx, id)
	require.NoError(t, err)
	require.False(t, ok, "cancelling a finished run reports false")
}

func TestSleepSurvivesEngineRestart(t *testing.T) {
	ctx := context.Background()
	clock := dagtest.NewClock(dagtest.Epoch)
	st := memstore.New(&memstore.Config{Now: clock.Now})
	var ran []string

	first, err := engine.New(st, &engine.Config{Manual: true})
	require.NoError(t, err)
	require.NoError(t, first.Register(orderDefinition(&ran)))
	id, err := first.Trigger(ctx, "order", "t", order{ID: "o", Amount: 5})
	require.NoError(t, err)
	_, err = first.Wait(ctx, id)
	require.ErrorIs(t, err, engine.ErrRunBlocked)
	require.Equal(t, []string{"Validate", "Charge", "FraudWindow"}, ran)

	// The first engine is gone; a day later a new one takes over the store.
	clock.Advance(24 * time.Hour)
	second, err := engine.New(st, &engine.Config{Manual: true})
	require.NoError(t, err)
	require.NoError(t, second.Register(orderDefinition(&ran)))
	res, err := second.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []string{"Validate", "Charge", "FraudWindow", "Ship", "Finalize"}, ran)
	require.Equal(t, store.RunCompleted, res.Status)
}

func TestStartedEngineRunsManyRuns(t *testing.T) {
	eachStore(t, testStartedEngineRunsManyRuns)
}

func testStartedEngineRunsManyRuns(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var joins atomic.Int64
	def := &engine.Definition{Name: "many", Steps: []engine.Step{
		{Name: "a", Run: fn(func(_ context.Context, in int, _ []string) (string, error) { return "a", nil })},
		{Name: "b", Parents: req("a"), Run: fn(func(_ context.Context, in int, _ []string) (string, error) { return "b", nil })},
		{Name: "c", Parents: req("a"), Run: fn(func(_ context.Context, in int, _ []string) (string, error) { return "c", nil })},
		{Name: "d", Parents: req("b", "c"), Run: fn(func(_ context.Context, in int, ps []string) (string, error) {
			joins.Add(1)
			return ps[0] + ps[1], nil
		})},
	}}
	e := startEngine(t, open(), def)
	var reqs []engine.TriggerRequest
	for i := range 500 {
		reqs = append(reqs, engine.TriggerRequest{Workflow: "many", Tenant: []string{"x", "y"}[i%2], Input: i})
	}
	ids, err := e.TriggerMany(ctx, reqs)
	require.NoError(t, err)
	for _, id := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "bc", output(t, res, "d"))
	}
	require.Equal(t, int64(500), joins.Load(), "every join exactly once")
}

func TestStopDrainsInFlightSteps(t *testing.T) {
	eachStore(t, testStopDrainsInFlightSteps)
}

func testStopDrainsInFlightSteps(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	def := &engine.Definition{Name: "drain", Steps: []engine.Step{
		{Name: "s", Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			started <- struct{}{}
			<-release
			return engine.Encode("done")
		}},
	}}
	st := spy(open())
	e, err := engine.New(st, &engine.Config{PollInterval: 5 * time.Millisecond, HeartbeatInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Start(ctx))
	id, err := e.Trigger(ctx, "drain", "t", 0)
	require.NoError(t, err)
	<-started
	// The only engine leads; a stopping engine gives leadership up at
	// once, which tells us that Stop is under way.
	require.Eventually(t, e.Leading, 10*time.Second, time.Millisecond)
	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(ctx) }()
	require.Eventually(t, func() bool { return !e.Leading() }, 10*time.Second, time.Millisecond, "Stop began")
	// While it drains, the engine keeps heartbeating for its task.
	require.NoError(t, waitRounds(ctx, &st.beats, 3), "the draining engine heartbeats")
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned while a step was still running: %v", err)
	default:
	}
	close(release)
	require.NoError(t, <-stopped)
	run, err := st.GetRun(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, run.Status, "the in-flight step finished and was stored")
	require.ErrorIs(t, e.Stop(ctx), engine.ErrNotStarted)
}

// TestStopPastDeadlineCancelsStepContext stops an engine whose step is
// still running when Stop's deadline passes: Stop reports the deadline and
// cancels the step's ctx, which the step honours.
func TestStopPastDeadlineCancelsStepContext(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{}, 1)
	sawCancel := make(chan error, 1)
	def := &engine.Definition{Name: "long", Steps: []engine.Step{
		{Name: "s", Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			started <- struct{}{}
			<-ctx.Done()
			sawCancel <- ctx.Err()
			return nil, ctx.Err()
		}},
	}}
	e, err := engine.New(memstore.New(nil), &engine.Config{PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Start(ctx))
	_, err = e.Trigger(ctx, "long", "t", 0)
	require.NoError(t, err)
	<-started
	select {
	case err := <-sawCancel:
		t.Fatalf("the step's ctx ended before Stop: %v", err)
	default:
	}
	stopCtx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, e.Stop(stopCtx), context.DeadlineExceeded)
	select {
	case err := <-sawCancel:
		require.ErrorIs(t, err, context.Canceled, "Stop cancelled the step's ctx")
	case <-time.After(10 * time.Second):
		t.Fatal("the step's ctx was not cancelled after Stop returned")
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	good := func() *engine.Definition {
		return &engine.Definition{Name: "good", Steps: []engine.Step{{Name: "a", Run: (&recorder{}).step("a")}}}
	}
	h := dagtest.New(t)
	require.NoError(t, h.Engine.Register(good()))

	t.Run("unknown workflow", func(t *testing.T) {
		_, err := h.Engine.Trigger(ctx, "nope", "t", 1)
		require.ErrorIs(t, err, engine.ErrUnknownWorkflow)
		require.EqualError(t, err, `trigger "nope": unknown workflow`)
	})
	t.Run("duplicate registration", func(t *testing.T) {
		err := h.Engine.Register(good())
		require.ErrorIs(t, err, engine.ErrDuplicateWorkflow)
	})
	t.Run("nil input", func(t *testing.T) {
		_, err := h.Engine.Trigger(ctx, "good", "t", nil)
		require.ErrorIs(t, err, engine.ErrNilInput)
		var p *order
		_, err = h.Engine.Trigger(ctx, "good", "t", p)
		require.ErrorIs(t, err, engine.ErrNilInput)
	})
	t.Run("unencodable input", func(t *testing.T) {
		_, err := h.Engine.Trigger(ctx, "good", "t", make(chan int))
		require.ErrorContains(t, err, "encode chan int")
	})
	t.Run("unknown run", func(t *testing.T) {
		_, err := h.Engine.Wait(ctx, dag.NewRunID())
		require.ErrorIs(t, err, store.ErrRunNotFound)
		_, err = h.Engine.Cancel(ctx, dag.NewRunID())
		require.ErrorIs(t, err, store.ErrRunNotFound)
	})
	t.Run("nil store and manual start", func(t *testing.T) {
		_, err := engine.New(nil, nil)
		require.Error(t, err)
		require.ErrorIs(t, h.Engine.Start(ctx), engine.ErrManual)
	})

	run := func(context.Context, engine.StepInput) ([]byte, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		def  *engine.Definition
		want string
	}{
		{"nil", nil, "nil definition"},
		{"no name", &engine.Definition{Steps: []engine.Step{{Name: "a", Run: run}}}, "empty workflow name"},
		{"no steps", &engine.Definition{Name: "w"}, "no steps"},
		{"unknown parent", &engine.Definition{Name: "w", Steps: []engine.Step{{Name: "a", Parents: req("ghost"), Run: run}}}, `step "a" has unknown parent "ghost"`},
		{"self edge", &engine.Definition{Name: "w", Steps: []engine.Step{{Name: "a", Parents: req("a"), Run: run}}}, `step "a" lists itself as a parent`},
		{"duplicate step", &engine.Definition{Name: "w", Steps: []engine.Step{{Name: "a", Run: run}, {Name: "a", Run: run}}}, `duplicate step "a"`},
		{"no run func", &engine.Definition{Name: "w", Steps: []engine.Step{{Name: "a"}}}, `step "a" has no Run func`},
		{"cycle", &engine.Definition{Name: "w", Steps: []engine.Step{
			{Name: "a", Run: run}, {Name: "b", Parents: req("a", "d"), Run: run},
			{Name: "c", Parents: req("b"), Run: run}, {Name: "d", Parents: req("c"), Run: run},
		}}, "cycle: b -> c -> d -> b"},
	} {
		t.Run("definition "+tc.name, func(t *testing.T) {
			err := h.Engine.Register(tc.def)
			require.ErrorIs(t, err, engine.ErrInvalidDefinition)
			require.ErrorContains(t, err, tc.want)
		})
	}

	t.Run("undecodable output", func(t *testing.T) {
		def := &engine.Definition{Name: "decode", Steps: []engine.Step{
			{Name: "a", Run: func(context.Context, engine.StepInput) ([]byte, error) { return engine.Encode("text") }},
			{Name: "b", Parents: req("a"), Retry: engine.RetryPolicy{MaxRetries: 5}, Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
				_, err := engine.ParentOutput[int](in, "a")
				return nil, err
			}},
		}}
		require.NoError(t, h.Engine.Register(def))
		res, err := h.Engine.Run(ctx, "decode", "t", 0)
		require.ErrorIs(t, err, engine.ErrRunFailed)
		require.Equal(t, 1, res.Tasks["b"].Attempt, "a decode error is terminal: no retry")
		require.Contains(t, res.Failure.Message, "decode output of a as int")
		_, err = engine.Output[int](res, "a")
		require.ErrorContains(t, err, "decode output of a as int")
		_, err = engine.Output[string](res, "b")
		require.ErrorIs(t, err, engine.ErrNoOutput)
	})
	t.Run("step returns error", func(t *testing.T) {
		def := &engine.Definition{Name: "err", Steps: []engine.Step{
			{Name: "a", Run: func(context.Context, engine.StepInput) ([]byte, error) { return nil, errors.New("no") }},
		}}
		require.NoError(t, h.Engine.Register(def))
		_, err := h.Engine.Run(ctx, "err", "t", 0)
		require.EqualError(t, err, "run "+errRunID(err)+" FAILED: step a failed on attempt 1: no")
	})
	t.Run("engine without workflows claims nothing", func(t *testing.T) {
		id, err := h.Engine.Trigger(ctx, "good", "t", 1)
		require.NoError(t, err)
		idle, err := engine.New(h.Store, &engine.Config{Manual: true, WorkerID: "idle"})
		require.NoError(t, err)
		_, err = idle.Poll(ctx)
		require.NoError(t, err)
		res, err := h.Engine.Result(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.TaskQueued, res.Tasks["a"].Status, "the idle engine left the task alone")
		res, err = h.Engine.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
		require.Equal(t, 1, res.Tasks["a"].Attempt)
	})
	t.Run("task of a workflow not registered here", func(t *testing.T) {
		// A store that ignored the claim's workflow filter hands this
		// engine a task it cannot run: it gives the task back for a
		// worker that knows the workflow, rather than failing the run.
		stray, err := engine.New(claimAll{h.Store}, &engine.Config{Manual: true, WorkerID: "stray"})
		require.NoError(t, err)
		require.NoError(t, stray.Register(&engine.Definition{Name: "other", Steps: []engine.Step{{Name: "a", Run: run}}}))
		id, err := h.Engine.Trigger(ctx, "good", "t", 2)
		require.NoError(t, err)
		n, err := stray.Poll(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n, "the stray engine claimed the task")
		res, err := h.Engine.Result(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunRunning, res.Status)
		require.Equal(t, store.TaskBackoff, res.Tasks["a"].Status)
		require.Contains(t, res.Tasks["a"].Error, `workflow "good" is not registered on worker stray`)

		h.Clock.Advance(time.Minute)
		res, err = h.Engine.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
		require.Equal(t, "a(2;)", output(t, res, "a"))
	})
}

// claimAll is a store that claims tasks of every signature, whatever the
// engine asks for.
type claimAll struct{ store.Store }

func (c claimAll) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	p.Signatures = nil
	return c.Store.ClaimTasks(ctx, p)
}

func errRunID(err error) string {
	var re *engine.RunError
	if errors.As(err, &re) {
		return re.RunID.String()
	}
	return "?"
}

func TestFairnessAcrossTenants(t *testing.T) {
	ctx := context.Background()
	def := &engine.Definition{Name: "fair", Steps: []engine.Step{{Name: "a", Run: (&recorder{}).step("a")}}}
	h := newHarness(t, def)
	var bulk []engine.TriggerRequest
	for i := range 10_000 {
		bulk = append(bulk, engine.TriggerRequest{Workflow: "fair", Tenant: "B", Input: i})
	}
	_, err := h.Engine.TriggerMany(ctx, bulk)
	require.NoError(t, err)
	_, err = h.Engine.Trigger(ctx, "fair", "A", -1)
	require.NoError(t, err)
	claimed, err := h.Store.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 2, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	tenants := []string{claimed[0].Tenant, claimed[1].Tenant}
	require.Contains(t, tenants, "A", "A's one task is among the first 2 claimed behind B's 10,000")
}
