package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// The seed's order flow, wired by hand the way generated code wires it.

type order struct {
	ID     string
	Amount int64
}

type validation struct{ OK bool }

func orderDefinition(ran *[]string) *engine.Definition {
	note := func(s string) { *ran = append(*ran, s) }
	validOK := func(ok bool) engine.Predicate {
		name := "invalid"
		if ok {
			name = "valid"
		}
		return engine.Predicate{Name: name, Eval: func(_ context.Context, in engine.StepInput) (bool, error) {
			v, err := engine.ParentOutput[validation](in, "Validate")
			return v.OK == ok, err
		}}
	}
	return &engine.Definition{
		Name: "order",
		Steps: []engine.Step{
			{Name: "Validate", Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
				o, err := engine.Input[order](in)
				if err != nil {
					return nil, err
				}
				note("Validate")
				return engine.Encode(validation{OK: o.Amount > 0})
			}},
			{Name: "Charge", Parents: req("Validate"), Skip: []engine.Predicate{validOK(false)},
				Retry: engine.RetryPolicy{MaxRetries: 3, Backoff: time.Second},
				Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
					o, err := engine.Input[order](in)
					if err != nil {
						return nil, err
					}
					note("Charge")
					return engine.Encode(fmt.Sprintf("receipt-%s-%d", o.ID, o.Amount))
				}},
			{Name: "Reject", Parents: req("Validate"), Skip: []engine.Predicate{validOK(true)},
				Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
					note("Reject")
					return engine.Encode("rejected")
				}},
			{Name: "FraudWindow", Kind: engine.KindSleep, Parents: req("Charge"),
				Sleep: func(context.Context, engine.StepInput) (engine.Wake, error) {
					note("FraudWindow")
					return engine.Wake{Delay: 24 * time.Hour}, nil
				}},
			{Name: "Ship", Parents: req("Charge", "FraudWindow"),
				Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
					r, err := engine.ParentOutput[string](in, "Charge")
					if err != nil {
						return nil, err
					}
					note("Ship")
					return engine.Encode("shipped:" + r)
				}},
			{Name: "Finalize", Parents: opt("Ship", "Reject"),
				Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
					s, err := engine.ParentMaybe[string](in, "Ship")
					if err != nil {
						return nil, err
					}
					r, err := engine.ParentMaybe[string](in, "Reject")
					if err != nil {
						return nil, err
					}
					note("Finalize")
					return engine.Encode(fmt.Sprintf("ship=%s reject=%s", s.OrElse("none"), r.OrElse("none")))
				}},
		},
		OnFailure: func(context.Context, engine.StepInput, dag.Failure) error { note("Alert"); return nil },
	}
}

func TestOrderFlowValid(t *testing.T) {
	ctx := context.Background()
	var ran []string
	h := newHarness(t, orderDefinition(&ran))
	id, err := h.Engine.Trigger(ctx, "order", "tenant-42", order{ID: "o-1", Amount: 100})
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	require.Equal(t, []string{"Validate", "Charge", "FraudWindow"}, ran)

	mid, err := h.Engine.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, mid.Status)
	require.Equal(t, store.TaskSleeping, mid.Tasks["FraudWindow"].Status)
	require.Equal(t, dagtestEpoch().Add(24*time.Hour), mid.Tasks["FraudWindow"].WakeAt)

	h.Advance(ctx, 23*time.Hour)
	require.Len(t, ran, 3, "no step runs before the window closes")
	h.Advance(ctx, time.Hour)

	res, err := h.Engine.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []string{"Validate", "Charge", "FraudWindow", "Ship", "Finalize"}, ran)
	require.Equal(t, map[string]store.TaskStatus{
		"Validate": store.TaskCompleted, "Charge": store.TaskCompleted, "Reject": store.TaskSkipped,
		"FraudWindow": store.TaskCompleted, "Ship": store.TaskCompleted, "Finalize": store.TaskCompleted,
		engine.OnFailureStep: store.TaskPending,
	}, statuses(res))
	require.Equal(t, "skip=valid", res.Tasks["Reject"].Reason)
	require.Equal(t, "ship=shipped:receipt-o-1-100 reject=none", output(t, res, "Finalize"))

	events, err := h.Engine.Events(ctx, id)
	require.NoError(t, err)
	var sleepEvents []store.EventType
	for _, ev := range events {
		if ev.Step == "FraudWindow" {
			sleepEvents = append(sleepEvents, ev.Type)
		}
	}
	require.Equal(t, []store.EventType{store.EventQueued, store.EventStarted, store.EventSleeping, store.EventWoken, store.EventCompleted}, sleepEvents)
}

func TestOrderFlowInvalid(t *testing.T) {
	ctx := context.Background()
	var ran []string
	h := newHarness(t, orderDefinition(&ran))
	res, err := h.Engine.Run(ctx, "order", "tenant-42", order{ID: "o-2", Amount: 0})
	require.NoError(t, err, "no sleep on this branch: Run finishes without advancing the clock")
	require.Equal(t, []string{"Validate", "Reject", "Finalize"}, ran)
	require.Equal(t, map[string]store.TaskStatus{
		"Validate": store.TaskCompleted, "Charge": store.TaskSkipped, "Reject": store.TaskCompleted,
		"FraudWindow": store.TaskSkipped, "Ship": store.TaskSkipped, "Finalize": store.TaskCompleted,
		engine.OnFailureStep: store.TaskPending,
	}, statuses(res))
	require.Equal(t, "skip=invalid", res.Tasks["Charge"].Reason)
	require.Equal(t, "parent Charge skipped", res.Tasks["FraudWindow"].Reason)
	require.Equal(t, "parent Charge skipped", res.Tasks["Ship"].Reason)
	require.Equal(t, "ship=none reject=rejected", output(t, res, "Finalize"))
	receipt, err := engine.OutputMaybe[string](res, "Charge")
	require.NoError(t, err)
	require.False(t, receipt.Ok())
}

func TestSleepUntilAbsoluteTime(t *testing.T) {
	ctx := context.Background()
	at := dagtestEpoch().Add(90 * time.Minute)
	rec := &recorder{}
	def := &engine.Definition{Name: "until", Steps: []engine.Step{
		{Name: "nap", Kind: engine.KindSleep, Sleep: func(context.Context, engine.StepInput) (engine.Wake, error) {
			return engine.Wake{At: at}, nil
		}},
		{Name: "after", Parents: req("nap"), Run: rec.step("after")},
	}}
	h := newHarness(t, def)
	id, err := h.Engine.Trigger(ctx, "until", "t", 0)
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	next, ok := h.NextTimer(ctx)
	require.True(t, ok)
	require.Equal(t, at, next)
	h.Advance(ctx, 89*time.Minute)
	require.Empty(t, rec.ran())
	h.Advance(ctx, time.Minute)
	require.Equal(t, []string{"after"}, rec.ran())
	_, err = h.Engine.Wait(ctx, id)
	require.NoError(t, err)
}

func TestParallelSleepsFireIndependently(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	sleep := func(d time.Duration) func(context.Context, engine.StepInput) (engine.Wake, error) {
		return func(context.Context, engine.StepInput) (engine.Wake, error) { return engine.Wake{Delay: d}, nil }
	}
	def := &engine.Definition{Name: "naps", Steps: []engine.Step{
		{Name: "short", Kind: engine.KindSleep, Sleep: sleep(time.Hour)},
		{Name: "long", Kind: engine.KindSleep, Sleep: sleep(2 * time.Hour)},
		{Name: "afterShort", Parents: req("short"), Run: rec.step("afterShort")},
		{Name: "afterLong", Parents: req("long"), Run: rec.step("afterLong")},
	}}
	h := newHarness(t, def)
	_, err := h.Engine.Trigger(ctx, "naps", "t", 0)
	require.NoError(t, err)
	h.RunUntilIdle(ctx)
	h.Advance(ctx, time.Hour)
	require.Equal(t, []string{"afterShort"}, rec.ran())
	h.Advance(ctx, time.Hour)
	require.Equal(t, []string{"afterShort", "afterLong"}, rec.ran())
}
