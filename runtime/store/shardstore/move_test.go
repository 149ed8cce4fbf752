package shardstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/shardstore"
)

// TestMoveLogicalShard moves a logical shard from shard a to shard b by the
// documented procedure (pause its triggers, let its runs drain, copy its
// tenants' state, switch the map) and checks that no run is lost or made
// twice: every run before the move is found, listed and counted once, a
// key taken before the move is still taken, and new runs go to b.
func TestMoveLogicalShard(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := newSharded(t, "a", "b")
	shards := s.Shards()
	tenant := tenantsOn(s.Store, "a", "mover", 1)[0]
	l := store.LogicalShard(tenant)
	other := tenantsOn(s.Store, "a", "stayer", 1)[0]
	require.NotEqual(t, l, store.LogicalShard(other), "pick a tenant of another logical shard of a")

	release := make(chan struct{})
	blocking := &engine.Definition{Name: "held", Steps: []engine.Step{{Name: "wait", Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return engine.Encode("ok")
	}}}}

	// Before: runs of the tenant, one with a key, one still running.
	e1 := startEngine(t, s.Store, "w1", chain("diamond"), blocking)
	keyed, err := e1.Trigger(ctx, "diamond", tenant, 1, engine.WithKey("order-1"))
	require.NoError(t, err)
	done, err := e1.Trigger(ctx, "diamond", tenant, 2)
	require.NoError(t, err)
	held, err := e1.Trigger(ctx, "held", tenant, 3)
	require.NoError(t, err)
	for _, id := range []dag.RunID{keyed, done} {
		res, err := e1.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}
	require.NoError(t, s.SetTenantWeight(ctx, tenant, 3))
	// e1 keeps running the held run: a process that has not restarted
	// with the pause yet triggers nothing here.

	// 1. Pause the logical shard's triggers, in every process.
	paused, err := shardstore.New(shards, s.Map(), &shardstore.Config{Paused: []uint16{l}})
	require.NoError(t, err)
	e2 := startEngine(t, paused, "w2", chain("diamond"), blocking)
	_, err = e2.Trigger(ctx, "diamond", tenant, 4)
	require.ErrorIs(t, err, shardstore.ErrPaused)
	id, err := e2.Trigger(ctx, "diamond", other, 5)
	require.NoError(t, err, "the other logical shards go on")
	_, err = e2.Wait(ctx, id)
	require.NoError(t, err)

	// 2. Its runs drain: the move waits for them.
	_, err = shardstore.MoveLogical(ctx, s.pg["a"], s.pg["b"], l)
	require.ErrorIs(t, err, shardstore.ErrNotDrained)
	close(release)
	res, err := e2.Wait(ctx, held)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)

	// 3. Copy the tenants' state.
	mv, err := shardstore.MoveLogical(ctx, s.pg["a"], s.pg["b"], l)
	require.NoError(t, err)
	require.Equal(t, []string{tenant}, mv.Tenants)
	require.Equal(t, 1, mv.Keys)
	require.Equal(t, 1, mv.Weights)
	require.NoError(t, e1.Stop(ctx))
	require.NoError(t, e2.Stop(ctx))

	// 4. Map the logical shard to b, resumed.
	moved, err := shardstore.New(shards, s.Map().Move(l, "b"), nil)
	require.NoError(t, err)
	require.Equal(t, "b", moved.ShardFor(tenant).Name)
	e3 := startEngine(t, moved, "w3", chain("diamond"), blocking)

	for _, id := range []dag.RunID{keyed, done, held} {
		r, err := moved.GetRun(ctx, id)
		require.NoError(t, err, "a run from before the move is found")
		require.Equal(t, store.RunCompleted, r.Status)
		name, err := moved.ShardOf(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "a", name, "its history stays where it ran")
	}
	again, err := e3.TriggerRun(ctx, "diamond", tenant, 1, engine.WithKey("order-1"))
	require.NoError(t, err)
	require.True(t, again.Duplicate, "the key taken before the move is still taken")
	require.Equal(t, keyed, again.ID)
	fresh, err := e3.Trigger(ctx, "diamond", tenant, 6)
	require.NoError(t, err)
	res, err = e3.Wait(ctx, fresh)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	name, err := moved.ShardOf(ctx, fresh)
	require.NoError(t, err)
	require.Equal(t, "b", name, "new runs go to the new shard")
	weights, err := s.pg["b"].TenantWeights(ctx)
	require.NoError(t, err)
	require.Equal(t, []store.TenantWeight{{Tenant: tenant, Weight: 3}}, weights)

	// Every run once: four of the tenant, one of the other.
	page, err := moved.ListRuns(ctx, store.RunFilter{Tenant: tenant})
	require.NoError(t, err)
	require.Len(t, page.Runs, 1, "a tenant filter reads the tenant's shard: now b")
	all, err := moved.ListRuns(ctx, store.RunFilter{Workflow: ""})
	require.NoError(t, err)
	ids := make(map[dag.RunID]int)
	for _, r := range all.Runs {
		ids[r.ID]++
	}
	require.Equal(t, map[dag.RunID]int{keyed: 1, done: 1, held: 1, fresh: 1, id: 1}, ids)
	counts, err := moved.CountRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunCompleted: 5}, counts)
}
