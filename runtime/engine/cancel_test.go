package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestCancelNotifiesAnotherWorker cancels a run on one engine while its
// step executes on another engine whose heartbeat is 30 s away: the
// store's cancel notification, not the heartbeat, reaches the step.
func TestCancelNotifiesAnotherWorker(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		if !notifies(t, open()) {
			t.Skip("no notifications through a transaction pooler without a session URL: TestCancelWithoutNotifyRidesTheHeartbeat covers it")
		}
		latency := cancelAcrossWorkers(t, open, &engine.Config{
			WorkerID: "b", Concurrency: 4, PollInterval: 5 * time.Millisecond,
			Lease: 90 * time.Second, HeartbeatInterval: 30 * time.Second,
		})
		t.Logf("cancel reached the step on the other worker in %v", latency)
		require.Less(t, latency, 5*time.Second, "delivered well before the heartbeat, 30 s away")
	})
}

// TestCancelWithoutNotifyRidesTheHeartbeat cancels a run executing on an
// engine that ignores the store's notifications: its heartbeat still
// delivers the cancellation.
func TestCancelWithoutNotifyRidesTheHeartbeat(t *testing.T) {
	eachStoreAndPgBouncer(t, func(t *testing.T, open func() store.Store) {
		latency := cancelAcrossWorkers(t, open, &engine.Config{
			WorkerID: "b", Concurrency: 4, PollInterval: 5 * time.Millisecond,
			Lease: 2 * time.Second, HeartbeatInterval: 100 * time.Millisecond, DisableNotify: true,
		})
		t.Logf("cancel reached the step on the other worker in %v", latency)
		require.Less(t, latency, 10*time.Second)
	})
}

// cancelAcrossWorkers starts an engine with cfg that executes a step
// blocking until its ctx is done, cancels the step's run through another
// engine on the same store, and returns how long the step took to see it.
// The run ends CANCELLED.
func cancelAcrossWorkers(t *testing.T, open func() store.Store, cfg *engine.Config) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	started := make(chan dag.RunID, 1)
	sawCancel := make(chan time.Time, 1)
	def := &engine.Definition{Name: "blocking", Steps: []engine.Step{
		{Name: "block", Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			info, _ := dag.Info(ctx)
			started <- info.RunID
			<-ctx.Done()
			sawCancel <- time.Now()
			return nil, ctx.Err()
		}},
	}}
	b, err := engine.New(open(), cfg)
	require.NoError(t, err)
	require.NoError(t, b.Register(def))
	require.NoError(t, b.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Stop(ctx)
	})
	// a triggers and cancels; it is not started, so executes nothing.
	a, err := engine.New(open(), &engine.Config{WorkerID: "a", PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, a.Register(def))
	id, err := a.Trigger(ctx, "blocking", "t", 0)
	require.NoError(t, err)
	select {
	case got := <-started:
		require.Equal(t, id, got)
	case <-ctx.Done():
		t.Fatal("the step never started on the other worker")
	}
	at := time.Now()
	ok, err := a.Cancel(ctx, id)
	require.NoError(t, err)
	require.True(t, ok)
	var latency time.Duration
	select {
	case saw := <-sawCancel:
		latency = saw.Sub(at)
	case <-ctx.Done():
		t.Fatal("the step on the other worker never saw the cancellation")
	}
	res, err := a.Wait(ctx, id)
	require.ErrorIs(t, err, engine.ErrRunCancelled)
	require.Equal(t, store.RunCancelled, res.Status)
	return latency
}
