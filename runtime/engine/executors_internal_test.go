package engine

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// TestExecutorsEndWhenIdle runs many short steps through few executors,
// which start for tasks and end when none is waiting: every task runs
// exactly once (none is left in the queue by an executor ending just as it
// was sent), no more than Concurrency run at once, and once the work is
// done no executor is left.
func TestExecutorsEndWhenIdle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := memstore.New(nil)
	e, err := New(st, &Config{Concurrency: 3, PollInterval: time.Millisecond, WorkerID: "w"})
	require.NoError(t, err)
	var ran, running, most atomic.Int64
	require.NoError(t, e.Register(&Definition{Name: "short", Steps: []Step{{Name: "a", Run: func(context.Context, StepInput) ([]byte, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		ran.Add(1)
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		return Encode(1)
	}}}}))
	require.NoError(t, e.Start(ctx))
	defer func() { _ = e.Stop(context.Background()) }()

	const runs = 300
	ids := make([]dag.RunID, 0, runs)
	for range runs {
		id, err := e.Trigger(ctx, "short", "t", 0)
		require.NoError(t, err)
		ids = append(ids, id)
		if rand.IntN(4) == 0 {
			time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) // let executors run dry now and then
		}
	}
	for _, id := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}
	require.Equal(t, int64(runs), ran.Load(), "every step ran once")
	require.LessOrEqual(t, most.Load(), int64(3), "more steps ran at once than Concurrency")
	w := e.running()
	require.Eventually(t, func() bool { return w.Executors() == 0 }, 5*time.Second, time.Millisecond,
		"executors are left running with no work")
}
