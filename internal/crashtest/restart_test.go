package crashtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/crashtest/flow"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestPostgresRestartMidRun restarts the database under two working worker
// processes: they reconnect and every run completes.
func TestPostgresRestartMidRun(t *testing.T) {
	const runs = 100
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg := pgtest.NewPrimary(t, pgtest.ClusterOptions{})
	pool, err := pgxpool.New(ctx, pg.URL("postgres"))
	require.NoError(t, err)
	defer pool.Close()
	require.NoError(t, pgstore.Migrate(ctx, pool))
	_, err = pool.Exec(ctx, execTable)
	require.NoError(t, err)
	st, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)

	trigger, err := engine.New(st, &engine.Config{Manual: true})
	require.NoError(t, err)
	wf, err := flow.NewJobWorkflow(trigger)
	require.NoError(t, err)
	ids := make([]dag.RunID, 0, runs)
	for i := range runs {
		// Naps of different lengths spread the runs' ends over three
		// seconds: the first run to finish leaves most in flight, however
		// fast the workers are.
		nap := 200*time.Millisecond + time.Duration(i)*30*time.Millisecond
		run, err := wf.Start(ctx, fmt.Sprintf("tenant-%d", i%3), flow.Job{N: i, Work: 50 * time.Millisecond, Nap: nap})
		require.NoError(t, err)
		ids = append(ids, run.ID())
	}

	c := newCluster(t, pg.URL("postgres"), "-lease", "2s")
	c.start("w1")
	c.start("w2")
	// Let the workers get going, then take the database away for a moment.
	require.Eventually(t, func() bool { return finishedCount(ctx, st, ids) > 0 }, time.Minute, 20*time.Millisecond)
	before := finishedCount(ctx, st, ids)
	pg.Stop(t)
	time.Sleep(time.Second)
	pg.Start(t)
	// A run unfinished once the database is back was unfinished while it
	// was down: there must be some, or the restart hit no run.
	var after int
	require.Eventually(t, func() bool {
		n, err := finished(ctx, st, ids)
		after = n
		return err == nil
	}, time.Minute, 20*time.Millisecond, "the database answers again")
	t.Logf("%d of %d runs had finished before the restart, %d when the database came back", before, runs, after)
	require.Less(t, after, runs, "some runs were in flight across the restart")

	require.Eventually(t, func() bool { return finishedCount(ctx, st, ids) == runs }, 2*time.Minute, 100*time.Millisecond,
		"every run completes after the restart")
	c.stopAll()
	execs := loadExecutions(ctx, t, pool)
	for _, id := range ids {
		audit(ctx, t, c, st, id, execs[id], false)
	}
}

// finishedCount counts the runs that finished; a store error (the database
// is down) counts as none finished.
func finishedCount(ctx context.Context, st store.Store, ids []dag.RunID) int {
	n, err := finished(ctx, st, ids)
	if err != nil {
		return 0
	}
	return n
}

// finished counts the runs that finished.
func finished(ctx context.Context, st store.Store, ids []dag.RunID) (int, error) {
	n := 0
	for _, id := range ids {
		run, err := st.GetRun(ctx, id)
		if err != nil {
			return 0, err
		}
		if run.Status.Terminal() {
			n++
		}
	}
	return n, nil
}
