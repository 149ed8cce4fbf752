package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/console"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestReplica serves the console over a pgstore.Replicated on a real
// streaming standby that applies each commit late (recovery_min_apply_delay): pages read the
// standby and show its lag, and the page a cancel or a retry lands on
// shows what it did, whether the standby replays it in time (the page
// waits) or not (replay paused: the page reads the primary and says so).
func TestReplica(t *testing.T) {
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
	cfg, err := pgxpool.ParseConfig(standby.URL("postgres"))
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	rpool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(rpool.Close)
	rep := pgstore.NewReplicated(st, rpool, &pgstore.ReplicaConfig{Wait: time.Second})
	srv := serve(t, rep, console.Options{Source: rep.Source})
	c := client(t)

	newRun := func() dag.RunID {
		t.Helper()
		r := store.NewRun{ID: dag.NewRunID(), Workflow: "ship", Fingerprint: "fp", Tenant: "acme", Input: []byte(`{}`),
			Tasks: []store.NewTask{{Name: "pick", Kind: store.KindStep, Signature: "ship.pick", MaxAttempts: 3}}}
		require.NoError(t, st.CreateRuns(ctx, []store.NewRun{r}))
		primary.WaitReplayed(t, standby)
		return r.ID
	}
	page := func(id dag.RunID) string {
		t.Helper()
		code, body := get(t, c, srv.URL+"/dagen/runs/"+id.String())
		require.Equal(t, http.StatusOK, code, body)
		return body
	}
	act := func(id dag.RunID, action string) {
		t.Helper()
		m := csrfRE.FindStringSubmatch(page(id))
		require.NotNil(t, m)
		code, body, loc := post(t, c, srv.URL+"/dagen/runs/"+id.String()+"/"+action, url.Values{"csrf": {m[1]}})
		require.Equal(t, http.StatusSeeOther, code, body)
		require.Contains(t, loc, "?done=")
	}

	id := newRun()
	body := page(id)
	require.Contains(t, body, `id="run-status">running<`)
	require.Contains(t, body, `<span class="source" id="source">replica: up to date</span>`)
	for _, p := range []string{"/dagen/", "/dagen/workers"} {
		code, body := get(t, c, srv.URL+p)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `id="source">replica: `, "every page says where it reads from")
	}

	// The standby replays the cancel within the wait: the page shows it,
	// read from the standby.
	act(id, "cancel")
	body = page(id)
	require.Contains(t, body, `id="run-status">cancelled<`, "the page after a cancel shows it")
	require.Contains(t, body, `id="source">replica: `)
	// And so does a retry.
	act(id, "retry")
	body = page(id)
	require.Contains(t, body, `id="run-status">running<`, "the page after a retry shows it")
	require.Contains(t, body, `id="source">replica: `)

	// Replay paused: the page after the cancel reads the primary, and says
	// so.
	id = newRun()
	standby.Exec(t, "SELECT pg_wal_replay_pause()")
	act(id, "cancel")
	body = page(id)
	require.Contains(t, body, `id="run-status">cancelled<`, "the page after a cancel shows it, from the primary")
	require.Regexp(t, `<span class="source fallback" id="source">reading from the primary: the replica has not replayed the latest action yet; the replica is \S+ behind`, body)
	code, body := get(t, c, srv.URL+"/dagen/?status=running")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, id.String(), "the runs page reads the primary too: the cancel shows")

	// A standby that stops: the pages read the primary and say why.
	standby.Exec(t, "SELECT pg_wal_replay_resume()")
	standby.Stop(t)
	code, body = get(t, c, srv.URL+"/dagen/")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, id.String())
	require.Regexp(t, `id="source">reading from the primary: the replica failed \(`, body)
}
