package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// Signal waits at the engine level: a signal sent before, during and after
// the wait, a wait that times out, a second signal, and signals sent from
// many workers at once. storetest covers the store's transitions; these
// show what a workflow author sees.

// approvalDef is submit → Approval (a signal wait of a string payload,
// timeout 72h) → decide (takes it as optional, and submit as required: a
// step whose parents are all skipped is skipped) and record (takes it as
// required). decided counts decide's runs.
func approvalDef(name string, decided *atomic.Int64) *engine.Definition {
	return &engine.Definition{
		Name: name,
		Steps: []engine.Step{
			{Name: "submit", Run: fn(func(context.Context, int, []string) (string, error) { return "submitted", nil })},
			{Name: "Approval", Kind: engine.KindSignal, OutputType: "string", Parents: req("submit"), SignalTimeout: 72 * time.Hour},
			{Name: "decide", Parents: append(req("submit"), opt("Approval")...), Run: fn(func(_ context.Context, _ int, ps []string) (string, error) {
				decided.Add(1)
				return "decided:" + ps[1], nil
			})},
			{Name: "record", Parents: req("Approval"), Run: fn(func(_ context.Context, _ int, ps []string) (string, error) {
				return "recorded:" + ps[0], nil
			})},
		},
	}
}

// signalHarness starts a run of approvalDef on a harness, and returns
// them.
func signalHarness(t *testing.T) (*dagtest.Harness, dag.RunID, *atomic.Int64) {
	t.Helper()
	decided := new(atomic.Int64)
	h := newHarness(t, approvalDef("approval", decided))
	id, err := h.Engine.Trigger(context.Background(), "approval", "tenant", 1)
	require.NoError(t, err)
	return h, id, decided
}

func result(t *testing.T, h *dagtest.Harness, id dag.RunID) *engine.RunResult {
	t.Helper()
	res, err := h.Engine.Result(context.Background(), id)
	require.NoError(t, err)
	return res
}

func TestSignalDuringTheWait(t *testing.T) {
	ctx := context.Background()
	h, id, decided := signalHarness(t)
	h.RunUntilIdle(ctx)
	res := result(t, h, id)
	require.Equal(t, store.RunRunning, res.Status)
	require.Equal(t, store.TaskAwaiting, res.Tasks["Approval"].Status, "the wait holds no worker: the engine is idle")
	require.Equal(t, store.TaskPending, res.Tasks["decide"].Status)

	require.NoError(t, h.Engine.Signal(ctx, "approval", id, "Approval", "ann"))
	h.RunUntilIdle(ctx)
	res = result(t, h, id)
	require.Equal(t, store.RunCompleted, res.Status)
	require.Equal(t, "decided:ann", output(t, res, "decide"))
	require.Equal(t, "recorded:ann", output(t, res, "record"))
	require.Equal(t, "ann", output(t, res, "Approval"), "the payload is the wait's output")
	require.Equal(t, int64(1), decided.Load())

	events, err := h.Engine.Events(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []store.EventType{store.EventQueued, store.EventStarted, store.EventAwaiting, store.EventSignalled, store.EventCompleted},
		stepEvents(events, "Approval"))

	err = h.Engine.Signal(ctx, "approval", id, "Approval", "bob")
	require.ErrorIs(t, err, store.ErrSignalResolved, "a second signal for a resolved wait")
}

func TestSignalBeforeTheWait(t *testing.T) {
	ctx := context.Background()
	h, id, _ := signalHarness(t)
	// Nothing ran yet: submit is queued, the wait PENDING.
	require.NoError(t, h.Engine.Signal(ctx, "approval", id, "Approval", "early"))
	err := h.Engine.Signal(ctx, "approval", id, "Approval", "again")
	require.ErrorIs(t, err, store.ErrSignalHeld, "one signal is held per wait")
	h.RunUntilIdle(ctx)
	res := result(t, h, id)
	require.Equal(t, store.RunCompleted, res.Status, "the held signal resolves the wait when it is reached")
	require.Equal(t, "decided:early", output(t, res, "decide"))
	events, err := h.Engine.Events(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []store.EventType{store.EventSignalled, store.EventQueued, store.EventStarted, store.EventCompleted},
		stepEvents(events, "Approval"), "held, then completed at once: it never waited")
}

func TestSignalWaitTimesOut(t *testing.T) {
	ctx := context.Background()
	h, id, decided := signalHarness(t)
	h.RunUntilIdle(ctx)
	h.Advance(ctx, 72*time.Hour-time.Second)
	require.Equal(t, store.TaskAwaiting, result(t, h, id).Tasks["Approval"].Status, "not yet")
	h.Advance(ctx, time.Second)
	res := result(t, h, id)
	require.Equal(t, store.RunCompleted, res.Status)
	require.Equal(t, store.TaskSkipped, res.Tasks["Approval"].Status)
	require.Equal(t, "no signal within 72h", res.Tasks["Approval"].Reason)
	require.Equal(t, "decided:-", output(t, res, "decide"), "an optional child sees an empty Maybe")
	require.Equal(t, store.TaskSkipped, res.Tasks["record"].Status, "a required child is skipped")
	require.Equal(t, "parent Approval skipped", res.Tasks["record"].Reason)
	require.Equal(t, int64(1), decided.Load())

	err := h.Engine.Signal(ctx, "approval", id, "Approval", "late")
	require.ErrorIs(t, err, store.ErrSignalResolved)
}

func TestSignalErrors(t *testing.T) {
	ctx := context.Background()
	h, id, _ := signalHarness(t)
	require.NoError(t, h.Engine.Register(approvalDef("other", new(atomic.Int64))))
	h.RunUntilIdle(ctx)

	err := h.Engine.Signal(ctx, "other", id, "Approval", "x")
	require.ErrorIs(t, err, store.ErrNotSignal, "a run of another workflow")
	require.ErrorContains(t, err, `the run is of workflow "approval", not "other"`)
	require.ErrorIs(t, h.Engine.Signal(ctx, "approval", id, "submit", "x"), store.ErrNotSignal, "a step that is no wait")
	require.ErrorIs(t, h.Engine.Signal(ctx, "approval", id, "Aproval", "x"), store.ErrNotSignal)
	require.ErrorIs(t, h.Engine.Signal(ctx, "approval", dag.NewRunID(), "Approval", "x"), store.ErrRunNotFound)
	require.ErrorIs(t, h.Engine.Signal(ctx, "approval", id, "Approval", nil), engine.ErrNilInput)
	require.Error(t, h.Engine.Signal(ctx, "approval", id, "Approval", func() {}), "a payload that does not encode")

	ok, err := h.Engine.Cancel(ctx, id)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, store.TaskCancelled, result(t, h, id).Tasks["Approval"].Status)
	require.ErrorIs(t, h.Engine.Signal(ctx, "approval", id, "Approval", "x"), store.ErrSignalResolved, "a cancelled wait")
}

func TestSignalInvalidDefinitions(t *testing.T) {
	def := approvalDef("bad", new(atomic.Int64))
	def.Steps[1].Run = fn(func(context.Context, int, []string) (string, error) { return "", nil })
	def.Steps[1].SignalTimeout = -time.Hour
	err := def.Validate()
	require.ErrorContains(t, err, `signal step "Approval" has a func or skip predicates`)
	require.ErrorContains(t, err, `step "Approval" has negative retry or timeout settings`)
}

// TestSignalsResolveOnceAcrossWorkers starts waits on several workers,
// then sends each wait's signal from several store handles (as separate
// processes would) at once: each wait resolves exactly once, and its
// children run once.
func TestSignalsResolveOnceAcrossWorkers(t *testing.T) {
	eachStore(t, testSignalsResolveOnce)
}

func testSignalsResolveOnce(t *testing.T, open func() store.Store) {
	ctx := context.Background()
	const runs, senders = 12, 6
	decided := new(atomic.Int64)
	def := func() *engine.Definition { return approvalDef("approval", decided) }
	workers := []*engine.Engine{worker(t, open(), "w1", def()), worker(t, open(), "w2", def()), worker(t, open(), "w3", def())}
	ids := make([]dag.RunID, runs)
	for i := range ids {
		var err error
		ids[i], err = workers[i%len(workers)].Trigger(ctx, "approval", fmt.Sprintf("t%d", i%3), i)
		require.NoError(t, err)
	}
	// Half of the signals come before their wait begins (held), half after.
	require.Eventually(t, func() bool {
		for _, id := range ids[runs/2:] {
			res, err := workers[0].Result(ctx, id)
			if err != nil || res.Tasks["Approval"].Status != store.TaskAwaiting {
				return false
			}
		}
		return true
	}, 20*time.Second, 5*time.Millisecond)

	senderEngines := make([]*engine.Engine, senders)
	for i := range senderEngines {
		e, err := engine.New(open(), &engine.Config{Manual: true})
		require.NoError(t, err)
		require.NoError(t, e.Register(def()))
		senderEngines[i] = e
	}
	var wins [runs]atomic.Int64
	var other atomic.Value
	var wg sync.WaitGroup
	start := make(chan struct{})
	for s, e := range senderEngines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i, id := range ids {
				err := e.Signal(ctx, "approval", id, "Approval", fmt.Sprintf("s%d", s))
				switch {
				case err == nil:
					wins[i].Add(1)
				case errors.Is(err, store.ErrSignalResolved), errors.Is(err, store.ErrSignalHeld):
				default:
					other.Store(err)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if err, _ := other.Load().(error); err != nil {
		t.Fatalf("unexpected signal error: %v", err)
	}
	for i := range ids {
		require.Equal(t, int64(1), wins[i].Load(), "run %d: exactly one send succeeds", i)
	}
	for i, id := range ids {
		res, err := workers[0].Wait(ctx, id)
		require.NoError(t, err, "run %d", i)
		winner, err := engine.Output[string](res, "Approval")
		require.NoError(t, err)
		require.Equal(t, "decided:"+winner, output(t, res, "decide"))
	}
	require.Equal(t, int64(runs), decided.Load(), "each wait's child ran once")
}

// TestWaitsHoldNoSlot shows that a waiting run holds nothing: a worker
// with one slot has three runs waiting for signals and still runs another
// workflow's run to the end, then the signals finish the waiting runs.
func TestWaitsHoldNoSlot(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		decided := new(atomic.Int64)
		other := &engine.Definition{Name: "other", Steps: []engine.Step{{Name: "only", Run: fn(func(context.Context, int, []string) (string, error) { return "done", nil })}}}
		e, err := engine.New(open(), &engine.Config{WorkerID: "one-slot", Concurrency: 1, PollInterval: 5 * time.Millisecond, Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, e.Register(approvalDef("approval", decided)))
		require.NoError(t, e.Register(other))
		require.NoError(t, e.Start(ctx))
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		var ids []dag.RunID
		for i := range 3 {
			id, err := e.Trigger(ctx, "approval", "t", i)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		require.Eventually(t, func() bool {
			for _, id := range ids {
				res, err := e.Result(ctx, id)
				if err != nil || res.Tasks["Approval"].Status != store.TaskAwaiting {
					return false
				}
			}
			return true
		}, 20*time.Second, 5*time.Millisecond)
		res, err := e.Run(ctx, "other", "t", 1)
		require.NoError(t, err, "the waits hold no slot")
		require.Equal(t, store.RunCompleted, res.Status)
		for _, id := range ids {
			require.NoError(t, e.Signal(ctx, "approval", id, "Approval", "ok"))
		}
		for _, id := range ids {
			res, err := e.Wait(ctx, id)
			require.NoError(t, err)
			require.Equal(t, "decided:ok", output(t, res, "decide"))
		}
	})
}
