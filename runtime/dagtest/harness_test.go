package dagtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func napDefinition() *engine.Definition {
	return &engine.Definition{Name: "nap", Steps: []engine.Step{
		{Name: "Wait", Kind: engine.KindSleep, Sleep: func(context.Context, engine.StepInput) (engine.Wake, error) {
			return engine.Wake{Delay: 24 * time.Hour}, nil
		}},
		{Name: "Wake", Parents: []engine.Parent{{Name: "Wait"}}, Run: func(context.Context, engine.StepInput) ([]byte, error) {
			return engine.Encode("awake")
		}},
	}}
}

func TestAdvanceWakesASleep(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	require.NoError(t, h.Engine.Register(napDefinition()))
	id, err := h.Engine.Trigger(ctx, "nap", "t", struct{}{})
	require.NoError(t, err)
	require.Equal(t, 1, h.RunUntilIdle(ctx), "one task ran: the sleep step")
	res, err := h.Engine.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, res.Status)
	require.Equal(t, store.TaskSleeping, res.Tasks["Wait"].Status)

	at, ok := h.NextTimer(ctx)
	require.True(t, ok)
	require.Equal(t, dagtest.Epoch.Add(24*time.Hour), at)
	require.Equal(t, 0, h.Advance(ctx, time.Hour), "nothing is due after an hour")
	require.Equal(t, 2, h.Advance(ctx, 23*time.Hour), "the timer fires and the child runs")
	res, err = h.Engine.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	require.Equal(t, 24*time.Hour, h.Clock.Now().Sub(dagtest.Epoch))
}

func TestAdvanceToNextTimer(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	require.NoError(t, h.Engine.Register(napDefinition()))
	require.False(t, h.AdvanceToNextTimer(ctx), "no timer yet")
	id, err := h.Engine.Trigger(ctx, "nap", "t", struct{}{})
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	require.True(t, h.AdvanceToNextTimer(ctx))
	res, err := h.Engine.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "\"awake\"", string(res.Tasks["Wake"].Output))
}

func TestClock(t *testing.T) {
	c := dagtest.NewClock(dagtest.Epoch)
	c.Advance(time.Minute)
	require.Equal(t, dagtest.Epoch.Add(time.Minute), c.Now())
	c.Set(dagtest.Epoch)
	require.Equal(t, dagtest.Epoch, c.Now())
}
