package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
	"github.com/dagenhq/dagen/runtime/store/shardstore"
	"github.com/dagenhq/dagen/runtime/store/storetest"
)

// TestShardedConformance runs the conformance suite on a sharded store
// (shardstore) of three pgstores, each in its own schema. It lives here
// because the suite's rollback cases need pgstore's test-only RollBack.
// Three schemas a case make it longer than make test's budget:
// DAGEN_TEST_SHARDS=conformance runs it (docs/testing.md); the sharded
// store's own tests (runtime/store/shardstore) run by default.
func TestShardedConformance(t *testing.T) {
	if os.Getenv("DAGEN_TEST_SHARDS") != "conformance" {
		t.Skip("the conformance suite on a sharded store runs with DAGEN_TEST_SHARDS=conformance")
	}
	storetest.RunExcept(t, func(t *testing.T, now func() time.Time) store.Store {
		names := []string{"a", "b", "c"}
		byName := make(map[string]*pgstore.Store)
		var shards []shardstore.Shard
		for _, name := range names {
			st := newStore(t, now, 4)
			byName[name] = st
			shards = append(shards, shardstore.Shard{Name: name, Store: st})
		}
		s, err := shardstore.New(shards, shardstore.EvenMap(names...), nil)
		if err != nil {
			t.Fatalf("sharded store: %v", err)
		}
		return shardedRollingBack{Store: s, shards: byName}
	}, map[string]string{
		// docs/sharding.md, "What holds per shard".
		"Fleet/QueuePlaces": "a sharded store counts the places ahead in the run's own shard's queue",
		"Continue/Fairness": "a continuation weighs the tenants of the run's own shard, not the others' queues",
	})
}

// shardedRollingBack rolls a task back on the shard of its run.
type shardedRollingBack struct {
	*shardstore.Store
	shards map[string]*pgstore.Store
}

func (s shardedRollingBack) RollBack(ctx context.Context, run dag.RunID, step string) error {
	name, err := s.ShardOf(ctx, run)
	if err != nil {
		return fmt.Errorf("roll back %s/%s: %w", run, step, err)
	}
	return rollBack(ctx, s.shards[name], run, step)
}
