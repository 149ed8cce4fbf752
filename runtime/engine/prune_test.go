package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// eachStoreOnClock is eachStore with the storage on a fake clock of its
// own, stopped at start, which the test moves.
func eachStoreOnClock(t *testing.T, start time.Time, test func(t *testing.T, clock *dagtest.Clock, open func() store.Store)) {
	t.Run("memstore", func(t *testing.T) {
		t.Parallel()
		clock := dagtest.NewClock(start)
		st := memstore.New(&memstore.Config{Now: clock.Now})
		test(t, clock, func() store.Store { return st })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		clock := dagtest.NewClock(start)
		schema := schemas.Get(t)
		test(t, clock, func() store.Store {
			st, err := pgstore.New(context.Background(), pgtest.Pool(t, schema, 8), &pgstore.Config{Now: clock.Now})
			require.NoError(t, err)
			return st
		})
	})
}

func TestLeaderPrunesFinishedRuns(t *testing.T) {
	// The store's clock starts hours before the engine's: runs made then
	// are older than the pruning engine's Retention, whatever the wall
	// clock does while the test runs.
	eachStoreOnClock(t, time.Now().Add(-3*time.Hour), testLeaderPrunesFinishedRuns)
}

// testLeaderPrunesFinishedRuns starts an engine with a Retention of an hour
// over a store holding runs of three hours ago, finished or not, and a run
// finished just now: the engine, leading, prunes the old finished runs and
// keeps the unfinished one and the recent one. A leader prunes in its first
// housekeeping round, then once a minute: the test sees the first round.
func testLeaderPrunesFinishedRuns(t *testing.T, clock *dagtest.Clock, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := &engine.Definition{Name: "done", Steps: []engine.Step{
		{Name: "a", Run: fn(func(context.Context, int, []string) (string, error) { return "a", nil })},
	}}
	failed := &engine.Definition{Name: "failed", Steps: []engine.Step{
		{Name: "a", Run: fn(func(context.Context, int, []string) (string, error) { return "", dag.Terminal(errors.New("no")) })},
	}}
	// The store's clock stands still, so this sleep never ends: its run
	// stays RUNNING.
	napping := &engine.Definition{Name: "napping", Steps: []engine.Step{
		{Name: "nap", Kind: engine.KindSleep, Sleep: func(context.Context, engine.StepInput) (engine.Wake, error) {
			return engine.Wake{Delay: 24 * time.Hour}, nil
		}},
		{Name: "b", Parents: req("nap"), Run: fn(func(context.Context, int, []string) (string, error) { return "b", nil })},
	}}
	defs := []*engine.Definition{done, failed, napping}

	// An earlier worker leaves history behind.
	earlier, err := engine.New(open(), &engine.Config{Manual: true, WorkerID: "earlier"})
	require.NoError(t, err)
	for _, d := range defs {
		require.NoError(t, earlier.Register(d))
	}
	oldDone, err := earlier.Run(ctx, "done", "t", 1)
	require.NoError(t, err)
	oldFailed, err := earlier.Run(ctx, "failed", "t", 2)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	asleep, err := earlier.Trigger(ctx, "napping", "t", 3)
	require.NoError(t, err)
	_, err = earlier.Wait(ctx, asleep)
	require.ErrorIs(t, err, engine.ErrRunBlocked, "the run sleeps")
	clock.Set(time.Now())
	recent, err := earlier.Run(ctx, "done", "t", 4)
	require.NoError(t, err)

	st := spy(open())
	e, err := engine.New(st, &engine.Config{
		WorkerID: "pruner", PollInterval: 5 * time.Millisecond, HeartbeatInterval: 10 * time.Millisecond,
		Retention: time.Hour,
	})
	require.NoError(t, err)
	for _, d := range defs {
		require.NoError(t, e.Register(d))
	}
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	require.Eventually(t, func() bool { return st.prunes.Load() > 0 }, 20*time.Second, time.Millisecond,
		"the leader prunes once it starts")

	for _, id := range []dag.RunID{oldDone.ID, oldFailed.ID} {
		_, err := st.GetRun(ctx, id)
		require.ErrorIs(t, err, store.ErrRunNotFound, "run %s finished more than Retention ago: pruned", id)
	}
	for id, want := range map[dag.RunID]store.RunStatus{asleep: store.RunRunning, recent.ID: store.RunCompleted} {
		run, err := st.GetRun(ctx, id)
		require.NoError(t, err, "run %s is kept", id)
		require.Equal(t, want, run.Status)
	}
}
