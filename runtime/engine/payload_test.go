package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func TestPayloadCap(t *testing.T) {
	eachStore(t, testPayloadCap)
}

// testPayloadCap checks Config.MaxPayload: an input over it is refused at
// the trigger and creates nothing; an output over it fails its step for
// good, on its first attempt, with nothing of it stored; a signal payload
// over it is refused and leaves the wait waiting; -1 lifts the cap.
func testPayloadCap(t *testing.T, open func() store.Store) {
	ctx := context.Background()
	const limit = 1 << 10
	def := &engine.Definition{Name: "payload", Steps: []engine.Step{
		{Name: "echo", Retry: engine.RetryPolicy{MaxRetries: 2}, Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
			n, err := engine.Input[int](in)
			if err != nil {
				return nil, err
			}
			return engine.Encode(strings.Repeat("x", n))
		}},
		{Name: "Approval", Kind: engine.KindSignal, OutputType: "string", Parents: req("echo")},
	}}
	st := open()
	e, err := engine.New(st, &engine.Config{Manual: true, MaxPayload: limit})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))

	_, err = e.TriggerMany(ctx, []engine.TriggerRequest{{Workflow: "payload", Tenant: "t", Input: 1}, {Workflow: "payload", Tenant: "t", Input: strings.Repeat("y", limit)}})
	require.ErrorIs(t, err, engine.ErrPayloadTooLarge)
	require.ErrorContains(t, err, "the run's input encodes to 1,026 bytes, over the cap of 1,024 bytes")
	page, err := st.ListRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Empty(t, page.Runs, "a refused trigger creates none of its runs")

	id, err := e.Trigger(ctx, "payload", "t", 2*limit)
	require.NoError(t, err)
	_, err = e.Wait(ctx, id)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	res, err := e.Result(ctx, id)
	require.NoError(t, err)
	echo := res.Tasks["echo"]
	require.Equal(t, store.TaskFailed, echo.Status)
	require.Equal(t, 1, echo.Attempt, "no retry makes a smaller output")
	require.Contains(t, echo.Error, "the output of step echo encodes to 2,050 bytes, over the cap of 1,024 bytes")
	require.Nil(t, echo.Output)

	ok, err := e.Trigger(ctx, "payload", "t", 10)
	require.NoError(t, err)
	for range 3 {
		_, err = e.Poll(ctx)
		require.NoError(t, err)
	}
	err = e.Signal(ctx, "payload", ok, "Approval", strings.Repeat("z", limit))
	require.ErrorIs(t, err, engine.ErrPayloadTooLarge)
	require.NoError(t, e.Signal(ctx, "payload", ok, "Approval", "fits"), "the refused signal left the wait waiting")
	_, err = e.Wait(ctx, ok)
	require.NoError(t, err)

	free, err := engine.New(st, &engine.Config{Manual: true, MaxPayload: -1})
	require.NoError(t, err)
	require.NoError(t, free.Register(def))
	big, err := free.Trigger(ctx, "payload", "t", 4*limit)
	require.NoError(t, err)
	for range 3 {
		_, err = free.Poll(ctx)
		require.NoError(t, err)
	}
	res, err = free.Result(ctx, big)
	require.NoError(t, err)
	require.Equal(t, store.TaskCompleted, res.Tasks["echo"].Status, "-1: no cap")
}
