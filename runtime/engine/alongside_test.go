package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func TestFullClaimsOverlap(t *testing.T) {
	eachStore(t, testFullClaimsOverlap)
}

// testFullClaimsOverlap checks that a worker with a backlog claims twice
// at once, no more, and never holds more tasks than its Concurrency: each
// full batch the poller claims wakes a second claimer. Idle, it claims
// once a round, one claim at a time.
func testFullClaimsOverlap(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const concurrency, batch, runs = 40, 10, 200
	var running, most atomic.Int64
	def := &engine.Definition{Name: "backlog", Steps: []engine.Step{{Name: "a", Run: func(context.Context, engine.StepInput) ([]byte, error) {
		keepMost(&most, running.Add(1))
		defer running.Add(-1)
		time.Sleep(time.Millisecond)
		return engine.Encode("done")
	}}}}
	st := spy(open())
	st.claimDelay = 5 * time.Millisecond // long enough for the second claim to start meanwhile
	e := workerWith(t, st, engine.Config{
		WorkerID: "w", Concurrency: concurrency, BatchSize: batch, PollInterval: 5 * time.Millisecond,
		IdlePollInterval: 5 * time.Millisecond, Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond,
	}, def)

	// Idle: claims come one at a time.
	require.NoError(t, waitRounds(ctx, &st.polls, 10))
	require.Equal(t, int64(1), st.claimsAtOnce.Load(), "an idle worker claimed twice at once")

	owner, err := engine.New(open(), &engine.Config{Manual: true, WorkerID: "owner"})
	require.NoError(t, err)
	require.NoError(t, owner.Register(def))
	reqs := make([]engine.TriggerRequest, runs)
	for i := range reqs {
		reqs[i] = engine.TriggerRequest{Workflow: "backlog", Tenant: "t", Input: i}
	}
	ids, err := owner.TriggerMany(ctx, reqs)
	require.NoError(t, err)
	for _, id := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}
	require.Equal(t, int64(2), st.claimsAtOnce.Load(), "claims under way at once, with a backlog")
	require.LessOrEqual(t, most.Load(), int64(concurrency), "steps running at once")
	require.Equal(t, int64(runs), st.claimed.Load(), "tasks claimed")
}
