package crashtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/crashtest/flow"
	"github.com/dagenhq/dagen/internal/faultproxy"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestLeaderFailover cuts the leader off the database (its connections go
// through a proxy the test closes): its lease expires, another worker
// leads within a few seconds, and the old one stops reporting the lead
// and does not take it back when it reconnects. Exactly one worker leads
// at the end of each round.
func TestLeaderFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := pgtest.Schema(t)
	admin := pgtest.Pool(t, schema, 2)
	require.NoError(t, pgstore.Migrate(ctx, admin))
	network, addr := pgtest.ServerAddr(t)

	var (
		workers []*engine.Engine
		proxies []*faultproxy.Proxy
	)
	for _, id := range []string{"a", "b", "c"} {
		proxy, err := faultproxy.Start(network, addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = proxy.Close() })
		cfg, err := pgxpool.ParseConfig(pgtest.ViaURL(t, schema, proxy.Addr()) + "&connect_timeout=1")
		require.NoError(t, err)
		cfg.MaxConns = 4
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		st, err := pgstore.New(ctx, pool, nil)
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
		proxies = append(proxies, proxy)
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
		proxies[old].Set(faultproxy.Down)
		start := time.Now()
		require.Eventually(t, func() bool {
			ls := leaders()
			return len(ls) == 1 && ls[0] != old
		}, 10*time.Second, 10*time.Millisecond, "round %d: another worker leads, and only it, after the leader was cut off", round)
		t.Logf("round %d: worker %s lost the lead, worker %s took it after %v",
			round, workers[old].WorkerID(), workers[leaders()[0]].WorkerID(), time.Since(start).Round(time.Millisecond))
		proxies[old].Set(faultproxy.Up)
		now := leaders()[0]
		// Back on line, the old leader finds the lease taken and stays a
		// follower.
		time.Sleep(500 * time.Millisecond)
		require.Equal(t, []int{now}, leaders(), "round %d: the old leader does not take the lead back", round)
	}
}
