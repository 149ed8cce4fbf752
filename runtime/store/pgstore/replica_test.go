package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/faultproxy"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// readOnlyPool is a pool on url whose sessions cannot write, as the
// dagen command opens a replica's.
func readOnlyPool(t *testing.T, url, schema string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// TestReplicatedSplitsReadsAndActions: with two schemas standing for a
// primary and its replica, reads come from the replica's, actions go to
// the primary's, a run only the primary knows is read there, and a
// replica that is down leaves reads to the primary with a note.
func TestReplicatedSplitsReadsAndActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := stores(t, 1, nil)[0]
	replica := stores(t, 1, nil)[0]
	onPrimary, onReplica := newRun("ship", "acme", step("pick")), newRun("ship", "acme", step("pick"))
	require.NoError(t, primary.CreateRuns(ctx, []store.NewRun{onPrimary}))
	require.NoError(t, replica.CreateRuns(ctx, []store.NewRun{onReplica}))
	var schema string
	require.NoError(t, replica.Pool().QueryRow(ctx, "SELECT current_schema()").Scan(&schema))

	rep := pgstore.NewReplicated(primary, readOnlyPool(t, pgtest.URL(), schema), nil)
	page, err := rep.ListRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Equal(t, []dag.RunID{onReplica.ID}, ids(page), "runs listed")
	counts, err := rep.CountRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunRunning: 1}, counts)

	ok, err := rep.CancelRun(ctx, onPrimary.ID)
	require.NoError(t, err)
	require.True(t, ok, "the primary's run is cancelled")
	_, err = rep.CancelRun(ctx, onReplica.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "an action never goes to the replica")
	run, err := rep.GetRun(ctx, onPrimary.ID)
	require.NoError(t, err, "a run the replica does not know is read from the primary")
	require.Equal(t, store.RunCancelled, run.Status)
	require.Equal(t, store.ReadSource{}, rep.Source(ctx), "a replica that is not a standby shows no lag")
	require.NoError(t, rep.CatchUp(ctx))

	down := pgstore.NewReplicated(primary, readOnlyPool(t, "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", schema), nil)
	page, err = down.ListRuns(ctx, store.RunFilter{})
	require.NoError(t, err, "a replica that is down leaves reads to the primary")
	require.Equal(t, []dag.RunID{onPrimary.ID}, ids(page))
	src := down.Source(ctx)
	require.False(t, src.Replica)
	require.Contains(t, src.String(), "reading from the primary: the replica failed")

	// A replica that freezes after serving: a read waits Timeout for it,
	// then reads the primary; the next reads leave it alone for Retry.
	network, addr := pgtest.ServerAddr(t)
	proxy, err := faultproxy.Start(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	const timeout = 500 * time.Millisecond
	frozen := pgstore.NewReplicated(primary, readOnlyPool(t, pgtest.ViaURL(t, schema, proxy.Addr()), schema),
		&pgstore.ReplicaConfig{Timeout: timeout, Retry: time.Minute})
	page, err = frozen.ListRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Equal(t, []dag.RunID{onReplica.ID}, ids(page))
	proxy.Set(faultproxy.Frozen)
	started := time.Now()
	page, err = frozen.ListRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Equal(t, []dag.RunID{onPrimary.ID}, ids(page), "read from the primary")
	require.GreaterOrEqual(t, time.Since(started), timeout, "after waiting for the replica")
	started = time.Now()
	for range 3 {
		_, err = frozen.GetRun(ctx, onPrimary.ID)
		require.NoError(t, err)
	}
	require.Regexp(t, `^reading from the primary: the replica failed \(no answer within 500ms\)$`, frozen.Source(ctx).String())
	require.Less(t, time.Since(started), timeout, "the next reads, and the source line, do not wait for it")
	proxy.Set(faultproxy.Up)
}

func ids(p store.RunPage) []dag.RunID {
	var out []dag.RunID
	for _, r := range p.Runs {
		out = append(out, r.ID)
	}
	return out
}

// TestReplicatedOnAStandby runs a Replicated over a real streaming
// standby that applies each commit late (recovery_min_apply_delay): reads come from the
// standby, the page after an action shows it (by waiting for the standby,
// or, with replay paused, from the primary), the lag shows, and a
// standby that stops leaves reads to the primary.
func TestReplicatedOnAStandby(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := pgtest.NewPrimary(t, pgtest.ClusterOptions{})
	standby := primary.NewStandby(t, pgtest.ClusterOptions{Settings: map[string]string{"recovery_min_apply_delay": "'300ms'"}})
	pool, err := pgxpool.New(ctx, primary.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	st, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	primary.WaitReplayed(t, standby)
	const wait = time.Second
	rep := pgstore.NewReplicated(st, readOnlyPool(t, standby.URL("postgres"), ""), &pgstore.ReplicaConfig{Wait: wait, Retry: 200 * time.Millisecond})
	onStandby := func(id dag.RunID) store.RunStatus {
		t.Helper()
		conn := standby.Conn(t, "postgres")
		defer conn.Close(ctx)
		var status string
		require.NoError(t, conn.QueryRow(ctx, "SELECT status FROM dagen_runs WHERE id = $1", id).Scan(&status))
		return store.RunStatus(status)
	}

	t.Run("reads come from the standby and show its lag", func(t *testing.T) {
		standby.Exec(t, "SELECT pg_wal_replay_pause()")
		r := newRun("ship", "acme", step("pick"))
		require.NoError(t, st.CreateRuns(ctx, []store.NewRun{r}))
		page, err := rep.ListRuns(ctx, store.RunFilter{})
		require.NoError(t, err)
		require.NotContains(t, ids(page), r.ID, "listed from the standby, which has not replayed the run")
		src := rep.Source(ctx)
		require.True(t, src.Replica, "%+v", src)
		require.Positive(t, src.Behind)
		require.Regexp(t, `^replica: \S+ behind \(\S+ \S*B of WAL\)$`, src.String())
		got, err := rep.GetRun(ctx, r.ID)
		require.NoError(t, err, "a run the standby has not replayed is read from the primary")
		require.Equal(t, r.ID, got.ID)
		standby.Exec(t, "SELECT pg_wal_replay_resume()")
		primary.WaitReplayed(t, standby)
		require.Equal(t, "replica: up to date", rep.Source(ctx).String())
	})

	t.Run("the read after an action waits for the standby", func(t *testing.T) {
		r := newRun("ship", "acme", step("pick"))
		require.NoError(t, st.CreateRuns(ctx, []store.NewRun{r}))
		primary.WaitReplayed(t, standby)
		ok, err := rep.CancelRun(ctx, r.ID)
		require.NoError(t, err)
		require.True(t, ok)
		started := time.Now()
		got, err := rep.GetRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, store.RunCancelled, got.Status, "the read after the cancel shows it")
		require.Less(t, time.Since(started), wait, "read from the standby once it replayed the cancel")
		require.Empty(t, rep.Source(ctx).Fallback)
		require.Equal(t, store.RunCancelled, onStandby(r.ID))
	})

	t.Run("the read after an action the standby has not replayed reads the primary", func(t *testing.T) {
		r := newRun("ship", "acme", step("pick"))
		require.NoError(t, st.CreateRuns(ctx, []store.NewRun{r}))
		primary.WaitReplayed(t, standby)
		standby.Exec(t, "SELECT pg_wal_replay_pause()")
		ok, err := rep.CancelRun(ctx, r.ID)
		require.NoError(t, err)
		require.True(t, ok)
		started := time.Now()
		got, err := rep.GetRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, store.RunCancelled, got.Status, "the read after the cancel shows it, from the primary")
		require.GreaterOrEqual(t, time.Since(started), wait, "it waited for the standby first")
		started = time.Now()
		_, err = rep.ListEvents(ctx, r.ID)
		require.NoError(t, err)
		require.Less(t, time.Since(started), wait/2, "the page's next read does not wait again")
		require.Equal(t, store.RunRunning, onStandby(r.ID), "the standby has not replayed the cancel")
		src := rep.Source(ctx)
		require.Contains(t, src.String(), "reading from the primary: the replica has not replayed the latest action yet; the replica is ")
		require.ErrorIs(t, rep.CatchUp(ctx), pgstore.ErrReplicaBehind)

		standby.Exec(t, "SELECT pg_wal_replay_resume()")
		require.NoError(t, rep.CatchUp(ctx))
		require.Equal(t, "replica: up to date", rep.Source(ctx).String())
	})

	t.Run("a standby that stops leaves reads to the primary", func(t *testing.T) {
		standby.Stop(t)
		r := newRun("ship", "acme", step("pick"))
		require.NoError(t, st.CreateRuns(ctx, []store.NewRun{r}))
		page, err := rep.ListRuns(ctx, store.RunFilter{})
		require.NoError(t, err)
		require.Contains(t, ids(page), r.ID)
		require.Contains(t, rep.Source(ctx).String(), "reading from the primary: the replica failed")
		standby.Start(t)
		primary.WaitReplayed(t, standby)
		time.Sleep(300 * time.Millisecond) // Retry
		require.Equal(t, "replica: up to date", rep.Source(ctx).String())
	})
}
