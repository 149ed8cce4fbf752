package crashtest

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/crashtest/flow"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestKilledBeforeCommitLeavesNothing: a process inserts an order and
// starts its run in one transaction (StartTx), and is SIGKILLed before it
// commits. Nothing of either remains: no order, no run, no task, no queue
// entry, no key; the key is free again and the tenant's queue row is not
// held.
func TestKilledBeforeCommitLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 4)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	_, err := pool.Exec(ctx, "CREATE TABLE crash_orders (id text PRIMARY KEY)")
	require.NoError(t, err)
	bin, err := buildWorker()
	require.NoError(t, err)

	// The process's sessions carry the schema's name, for pg_stat_activity:
	// other tests share the database.
	app := "trigger-" + schema
	cmd := exec.Command(bin, "-url", pgtest.SchemaURL(t, schema)+"&application_name="+app, "-id", "trigger", "-trigger-tx", "o-1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the trigger process: %s", stderr.String())
	id, err := dag.ParseRunID(strings.TrimSpace(strings.TrimPrefix(line, "triggered ")))
	require.NoError(t, err, line)

	// The transaction is open, its work done.
	var open int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND state = 'idle in transaction'`, app).Scan(&open))
	require.Equal(t, 1, open, "the trigger's transaction is open")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool { // the server ends the dead client's backend
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND state LIKE 'idle in transaction%'`, app).Scan(&n)
		return err == nil && n == 0
	}, 10*time.Second, 10*time.Millisecond)

	for _, table := range []string{"crash_orders", "dagen_runs", "dagen_tasks", "dagen_ready", "dagen_run_keys", "dagen_timers", "dagen_events", "dagen_tenant_groups"} {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
		require.Zero(t, n, "%s after the kill", table)
	}
	st, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	_, err = st.GetRun(ctx, id)
	require.ErrorIs(t, err, store.ErrRunNotFound)

	// The key is free, and the tenant's row of the fair queue is not held:
	// a trigger with the key starts a run of its own at once.
	e, err := engine.New(st, nil)
	require.NoError(t, err)
	wf, err := flow.NewJobWorkflow(e)
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	run, err := wf.Start(tctx, "tenant", flow.Job{N: 1}, engine.WithKey("o-1"))
	require.NoError(t, err)
	require.False(t, run.Duplicate())
	require.NotEqual(t, id, run.ID())
}
