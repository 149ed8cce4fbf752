package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func TestWorkersAndBacklog(t *testing.T) {
	eachStore(t, testWorkersAndBacklog)
}

// testWorkersAndBacklog starts a worker whose step waits, and checks that
// Workers lists it alive with the signatures it serves and Backlog counts
// the waiting step as running and the others as queued.
func testWorkersAndBacklog(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	release := make(chan struct{})
	def := &engine.Definition{Name: "fleet", Steps: []engine.Step{{Name: "s", Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
		<-release
		return engine.Encode(1)
	}}}}
	e, err := engine.New(open(), &engine.Config{WorkerID: "fleet-w", Concurrency: 1, PollInterval: 5 * time.Millisecond, HeartbeatInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Start(ctx))
	defer func() {
		close(release)
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		require.NoError(t, e.Stop(sctx))
	}()
	for range 3 {
		_, err := e.Trigger(ctx, "fleet", "acme", 1)
		require.NoError(t, err)
	}
	var oldest time.Duration
	require.Eventually(t, func() bool {
		b, err := e.Backlog(ctx)
		if err != nil || len(b) != 1 {
			return false
		}
		oldest = b[0].OldestQueued
		b[0].OldestQueued = 0
		return b[0] == store.BacklogEntry{Tenant: "acme", Workflow: "fleet", Running: 1, Queued: 2}
	}, 10*time.Second, 5*time.Millisecond, "one running (the only slot), two queued")
	require.GreaterOrEqual(t, oldest, time.Duration(0), "the oldest queued task's age")
	time.Sleep(20 * time.Millisecond)
	b, err := e.Backlog(ctx)
	require.NoError(t, err)
	require.Len(t, b, 1)
	require.Greater(t, b[0].OldestQueued, oldest, "the oldest queued task ages while it waits")

	require.Eventually(t, e.Leading, 10*time.Second, 5*time.Millisecond)
	workers, err := e.Workers(ctx)
	require.NoError(t, err)
	require.Len(t, workers, 1)
	require.Equal(t, "fleet-w", workers[0].ID)
	require.True(t, workers[0].Alive)
	require.True(t, workers[0].Leader, "the only worker leads")
	require.Contains(t, workers[0].Signatures, def.Signatures()["s"])
}
