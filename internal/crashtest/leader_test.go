package crashtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/crashtest/flow"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestLeaderFailover kills the connection that holds the leader lock:
// another worker leads within a few seconds. (The lock is exclusive, but an
// ex-leader learns of its loss only at its next check; housekeeping is
// fenced like everything else, so a late round of it is harmless.)
func TestLeaderFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := pgtest.Schema(t)
	admin := pgtest.Pool(t, schema, 2)
	require.NoError(t, pgstore.Migrate(ctx, admin))

	var workers []*engine.Engine
	for _, id := range []string{"a", "b", "c"} {
		st, err := pgstore.New(ctx, pgtest.Pool(t, schema, 4), nil)
		require.NoError(t, err)
		e, err := engine.New(st, &engine.Config{WorkerID: id, Lease: time.Second, HeartbeatInterval: 100 * time.Millisecond})
		require.NoError(t, err)
		_, err = flow.NewJobWorkflow(e)
		require.NoError(t, err)
		require.NoError(t, e.Start(ctx))
		t.Cleanup(func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = e.Stop(stopCtx)
		})
		workers = append(workers, e)
	}
	leaders := func() []int {
		var ls []int
		for i, w := range workers {
			if w.Leading() {
				ls = append(ls, i)
			}
		}
		return ls
	}
	require.Eventually(t, func() bool { return len(leaders()) == 1 }, 5*time.Second, 10*time.Millisecond, "one leader")
	for round := range 3 {
		old := leaders()[0]
		_, err := admin.Exec(ctx, `
			SELECT pg_terminate_backend(l.pid) FROM pg_locks l
			WHERE l.locktype = 'advisory' AND l.granted
			  AND l.objid = (hashtext('dagen.leader.' || current_schema())::bigint & 4294967295)::oid`)
		require.NoError(t, err)
		start := time.Now()
		require.Eventually(t, func() bool {
			ls := leaders()
			return len(ls) == 1 && ls[0] != old
		}, 5*time.Second, 10*time.Millisecond, "round %d: another worker leads after the leader's connection died", round)
		t.Logf("round %d: worker %s lost the lead, worker %s took it after %v",
			round, workers[old].WorkerID(), workers[leaders()[0]].WorkerID(), time.Since(start).Round(time.Millisecond))
	}
}
