package shardstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
	"github.com/dagenhq/dagen/runtime/store/shardstore"
)

// TestOneShardDown: shard c is a Postgres cluster of its own; once it is
// killed, the runs of the tenants of shards a and b still complete, and a
// trigger for a tenant of c fails and names the shard.
func TestOneShardDown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster := pgtest.NewPrimary(t, pgtest.ClusterOptions{})
	pgC, err := pgstore.OpenConfig(ctx, cluster.URL("postgres"), nil)
	require.NoError(t, err)
	t.Cleanup(pgC.Close)
	pgA, pgB := pgShard(t, 8), pgShard(t, 8)
	var mu sync.Mutex
	failed := make(map[string]int)
	s, err := shardstore.New([]shardstore.Shard{{Name: "a", Store: pgA}, {Name: "b", Store: pgB}, {Name: "c", Store: pgC}},
		shardstore.EvenMap("a", "b", "c"), &shardstore.Config{ShardFailed: func(shard string, err error) {
			mu.Lock()
			failed[shard]++
			mu.Unlock()
		}})
	require.NoError(t, err)
	e := startEngine(t, s, "w1", chain("diamond"))

	run := func(tenants []string) ([]dag.RunID, error) {
		var ids []dag.RunID
		for _, tn := range tenants {
			id, err := e.Trigger(ctx, "diamond", tn, 1)
			if err != nil {
				return ids, err
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	waitAll := func(ids []dag.RunID) {
		t.Helper()
		for _, id := range ids {
			res, err := e.Wait(ctx, id)
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, res.Status)
		}
	}
	onC := tenantsOn(s, "c", "down", 3)
	ids, err := run(onC)
	require.NoError(t, err)
	waitAll(ids)

	cluster.Kill(t)
	healthy := append(tenantsOn(s, "a", "up", 5), tenantsOn(s, "b", "up", 5)...)
	ids, err = run(healthy)
	require.NoError(t, err)
	waitAll(ids)

	_, err = run(onC[:1])
	require.ErrorContains(t, err, "shard c", "a trigger for a tenant of the shard down fails, naming it")
	mu.Lock()
	defer mu.Unlock()
	require.Positive(t, failed["c"], "the store went past shard c's failures and said so")
	require.Zero(t, failed["a"]+failed["b"])
}
