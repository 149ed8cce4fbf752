package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// never and always are skip predicates.
var (
	never  = engine.Predicate{Name: "never", Eval: func(context.Context, engine.StepInput) (bool, error) { return false, nil }}
	always = engine.Predicate{Name: "always", Eval: func(context.Context, engine.StepInput) (bool, error) { return true, nil }}
)

// TestTruthTable covers every row of DESIGN §3 for a child with two
// parents, each parent completed or skipped, required or optional.
func TestTruthTable(t *testing.T) {
	type parent struct {
		skipped  bool
		optional bool
	}
	cases := []struct {
		name       string
		p1, p2     parent
		childSkip  []engine.Predicate
		wantStatus store.TaskStatus
		wantReason string
		wantOutput string
	}{
		{"required parent skipped cascades", parent{skipped: true}, parent{}, nil, store.TaskSkipped, "parent p1 skipped", ""},
		{"required parent skipped beats optional completed", parent{skipped: true}, parent{optional: true}, nil, store.TaskSkipped, "parent p1 skipped", ""},
		{"all optional parents skipped cascades", parent{skipped: true, optional: true}, parent{skipped: true, optional: true}, nil, store.TaskSkipped, "all parents skipped", ""},
		{"predicate true skips", parent{}, parent{}, []engine.Predicate{never, always}, store.TaskSkipped, "skip=always", ""},
		{"predicates false run", parent{}, parent{}, []engine.Predicate{never, never}, store.TaskCompleted, "", "child(0;p1(0;),p2(0;))"},
		{"skipped optional parent arrives empty", parent{skipped: true, optional: true}, parent{}, nil, store.TaskCompleted, "", "child(0;-,p2(0;))"},
		{"cascade wins over predicates", parent{skipped: true}, parent{}, []engine.Predicate{never}, store.TaskSkipped, "parent p1 skipped", ""},
		{"both completed run", parent{optional: true}, parent{optional: true}, nil, store.TaskCompleted, "", "child(0;p1(0;),p2(0;))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			skipIf := func(b bool) []engine.Predicate {
				if b {
					return []engine.Predicate{always}
				}
				return nil
			}
			parents := []engine.Parent{{Name: "p1", Optional: tc.p1.optional}, {Name: "p2", Optional: tc.p2.optional}}
			def := &engine.Definition{Name: "tt", Steps: []engine.Step{
				{Name: "p1", Skip: skipIf(tc.p1.skipped), Run: rec.step("p1")},
				{Name: "p2", Skip: skipIf(tc.p2.skipped), Run: rec.step("p2")},
				{Name: "child", Parents: parents, Skip: tc.childSkip, Run: rec.step("child")},
			}}
			_, res, err := runDef(t, def, 0)
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, res.Status, "a run of completed and skipped tasks is COMPLETED")
			child := res.Tasks["child"]
			require.Equal(t, tc.wantStatus, child.Status)
			require.Equal(t, tc.wantReason, child.Reason)
			if tc.wantOutput != "" {
				require.Equal(t, tc.wantOutput, output(t, res, "child"))
			} else {
				require.NotContains(t, rec.ran(), "child", "a skipped step never runs")
			}
		})
	}
}

func TestCascadeThroughSeveralLevels(t *testing.T) {
	rec := &recorder{}
	def := &engine.Definition{Name: "cascade", Steps: []engine.Step{
		{Name: "a", Run: rec.step("a")},
		{Name: "b", Parents: req("a"), Skip: []engine.Predicate{always}, Run: rec.step("b")},
		{Name: "c", Parents: req("b"), Run: rec.step("c")},
		{Name: "d", Parents: req("c"), Run: rec.step("d")},
		{Name: "e", Parents: req("d"), Run: rec.step("e")},
		{Name: "merge", Parents: append(req("a"), opt("e")...), Run: rec.step("merge")},
	}}
	_, res, err := runDef(t, def, 5)
	require.NoError(t, err)
	require.Equal(t, map[string]store.TaskStatus{
		"a": store.TaskCompleted, "b": store.TaskSkipped, "c": store.TaskSkipped,
		"d": store.TaskSkipped, "e": store.TaskSkipped, "merge": store.TaskCompleted,
	}, statuses(res))
	require.Equal(t, "skip=always", res.Tasks["b"].Reason)
	require.Equal(t, "parent b skipped", res.Tasks["c"].Reason)
	require.Equal(t, "parent d skipped", res.Tasks["e"].Reason)
	require.Equal(t, []string{"a", "merge"}, rec.ran())
	require.Equal(t, "merge(5;a(5;),-)", output(t, res, "merge"))
}

func TestPredicateErrorIsAStepError(t *testing.T) {
	rec := &recorder{}
	broken := engine.Predicate{Name: "broken", Eval: func(context.Context, engine.StepInput) (bool, error) {
		return false, errors.New("cannot decide")
	}}
	def := &engine.Definition{Name: "pred", Steps: []engine.Step{
		{Name: "a", Skip: []engine.Predicate{broken}, Run: rec.step("a")},
	}}
	_, res, err := runDef(t, def, 0)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	require.Equal(t, "skip predicate broken: cannot decide", res.Failure.Message)
}

func TestSkipPredicateSeesParentOutput(t *testing.T) {
	rec := &recorder{}
	isOdd := engine.Predicate{Name: "odd", Eval: func(_ context.Context, in engine.StepInput) (bool, error) {
		v, err := engine.Input[int](in)
		return v%2 == 1, err
	}}
	def := &engine.Definition{Name: "odd", Steps: []engine.Step{
		{Name: "a", Run: rec.step("a")},
		{Name: "b", Parents: req("a"), Skip: []engine.Predicate{isOdd}, Run: rec.step("b")},
	}}
	_, res, err := runDef(t, def, 3)
	require.NoError(t, err)
	require.Equal(t, store.TaskSkipped, res.Tasks["b"].Status)
	_, res, err = runDef(t, def, 4)
	require.NoError(t, err)
	require.Equal(t, store.TaskCompleted, res.Tasks["b"].Status)
}

// flaky fails its first n attempts, recording the clock at each attempt.
type flaky struct {
	failures int
	terminal bool
	clock    func() time.Time
	attempts []time.Time
}

func (f *flaky) run(ctx context.Context, _ engine.StepInput) ([]byte, error) {
	f.attempts = append(f.attempts, f.clock())
	info, _ := dag.Info(ctx)
	if info.Attempt <= f.failures {
		err := errors.New("boom")
		if f.terminal {
			err = dag.Terminal(err)
		}
		return nil, err
	}
	return engine.Encode("ok")
}

func TestRetryBackoffSchedule(t *testing.T) {
	ctx := context.Background()
	f := &flaky{failures: 5}
	def := &engine.Definition{Name: "retry", Steps: []engine.Step{
		{Name: "s", Run: f.run, Retry: engine.RetryPolicy{MaxRetries: 5, Backoff: time.Second, MaxBackoff: 10 * time.Second}},
	}}
	h := newHarness(t, def)
	f.clock = h.Clock.Now
	run, err := h.Engine.Trigger(ctx, "retry", "t", 0)
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	for h.AdvanceToNextTimer(ctx) {
	}
	res, err := h.Engine.Wait(ctx, run)
	require.NoError(t, err)
	require.Equal(t, "ok", output(t, res, "s"))
	require.Len(t, f.attempts, 6)
	var gaps []time.Duration
	for i := 1; i < len(f.attempts); i++ {
		gaps = append(gaps, f.attempts[i].Sub(f.attempts[i-1]))
	}
	require.Equal(t, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}, gaps)

	events, err := h.Engine.Events(ctx, run)
	require.NoError(t, err)
	var retrying int
	for _, ev := range events {
		if ev.Type == store.EventRetrying {
			retrying++
			require.Equal(t, "boom", ev.Detail)
		}
	}
	require.Equal(t, 5, retrying)
}

func TestRetryWaitsForTheClock(t *testing.T) {
	ctx := context.Background()
	f := &flaky{failures: 1}
	def := &engine.Definition{Name: "retry", Steps: []engine.Step{
		{Name: "s", Run: f.run, Retry: engine.RetryPolicy{MaxRetries: 1, Backoff: time.Minute}},
	}}
	h := newHarness(t, def)
	f.clock = h.Clock.Now
	run, err := h.Engine.Trigger(ctx, "retry", "t", 0)
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	h.Advance(ctx, 59*time.Second)
	require.Len(t, f.attempts, 1, "the retry waits its whole backoff")
	_, err = h.Engine.Wait(ctx, run)
	require.ErrorIs(t, err, engine.ErrRunBlocked)
	waiting, err := h.Engine.Result(ctx, run)
	require.NoError(t, err)
	require.Equal(t, store.TaskBackoff, waiting.Tasks["s"].Status)
	require.Equal(t, dagtestEpoch().Add(time.Minute), waiting.Tasks["s"].WakeAt)
	h.Advance(ctx, time.Second)
	require.Len(t, f.attempts, 2)
	res, err := h.Engine.Wait(ctx, run)
	require.NoError(t, err)
	require.Equal(t, 2, res.Tasks["s"].Attempt)
}

func TestFailureForGoodAndOnFailure(t *testing.T) {
	for _, tc := range []struct {
		name         string
		f            *flaky
		wantAttempts int
	}{
		{"retries spent", &flaky{failures: 100}, 3},
		{"terminal error is not retried", &flaky{failures: 100, terminal: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rec := &recorder{}
			var calls []dag.Failure
			var inputs []int
			def := &engine.Definition{
				Name: "fail",
				Steps: []engine.Step{
					{Name: "a", Run: rec.step("a")},
					{Name: "s", Parents: req("a"), Run: tc.f.run, Retry: engine.RetryPolicy{MaxRetries: 2, Backoff: time.Second}},
					{Name: "after", Parents: req("s"), Run: rec.step("after")},
				},
				OnFailure: func(_ context.Context, in engine.StepInput, f dag.Failure) error {
					v, err := engine.Input[int](in)
					inputs = append(inputs, v)
					calls = append(calls, f)
					return err
				},
			}
			h := newHarness(t, def)
			tc.f.clock = h.Clock.Now
			id, err := h.Engine.Trigger(ctx, "fail", "t", 42)
			require.NoError(t, err)
			h.RunUntilIdle(ctx)
			for h.AdvanceToNextTimer(ctx) {
			}
			res, err := h.Engine.Wait(ctx, id)
			require.ErrorIs(t, err, engine.ErrRunFailed)
			var runErr *engine.RunError
			require.ErrorAs(t, err, &runErr)
			require.Equal(t, store.RunFailed, res.Status)
			require.Len(t, tc.f.attempts, tc.wantAttempts)
			require.Equal(t, store.TaskFailed, res.Tasks["s"].Status)
			require.Equal(t, store.TaskCancelled, res.Tasks["after"].Status, "nothing new is scheduled")
			require.Equal(t, []string{"a"}, rec.ran())
			require.Len(t, calls, 1, "onfailure exactly once")
			require.Equal(t, []int{42}, inputs)
			require.Equal(t, dag.Failure{RunID: id, Step: "s", Attempt: tc.wantAttempts, Message: "boom"}, calls[0])
			require.Equal(t, store.TaskCompleted, res.Tasks[engine.OnFailureStep].Status)
		})
	}
}

func TestPanicIsAFailedAttempt(t *testing.T) {
	def := &engine.Definition{Name: "panic", Steps: []engine.Step{
		{Name: "p", Run: func(context.Context, engine.StepInput) ([]byte, error) { panic("oops") }},
	}}
	_, res, err := runDef(t, def, 0)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	require.Contains(t, res.Failure.Message, "panic: oops")
}

func TestStepTimeout(t *testing.T) {
	def := &engine.Definition{Name: "slow", Steps: []engine.Step{
		{Name: "slow", Timeout: 10 * time.Millisecond, Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
	}}
	_, res, err := runDef(t, def, 0)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	require.Equal(t, "timed out after 10ms: context deadline exceeded", res.Failure.Message)
}

func TestStepInfoInContext(t *testing.T) {
	var got dag.StepInfo
	def := &engine.Definition{Name: "info", Steps: []engine.Step{
		{Name: "s", Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			got, _ = dag.Info(ctx)
			return nil, nil
		}},
	}}
	_, res, err := runDef(t, def, 0)
	require.NoError(t, err)
	require.Equal(t, dag.StepInfo{RunID: res.ID, Workflow: "info", Step: "s", Tenant: "tenant", Attempt: 1}, got)
	require.Equal(t, res.ID.String()+"/s", got.IdempotencyKey())
}
