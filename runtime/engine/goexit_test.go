package engine_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func TestGoexitIsAFailedAttempt(t *testing.T) {
	eachStore(t, testGoexitIsAFailedAttempt)
}

// testGoexitIsAFailedAttempt runs steps that call runtime.Goexit (as
// t.FailNow does) on a worker with two slots: each such attempt fails and
// is retried like a panicking one, the slot comes back, and more such
// steps than the worker has slots all finish.
func testGoexitIsAFailedAttempt(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var exits atomic.Int64
	def := &engine.Definition{Name: "goexit", Steps: []engine.Step{{
		Name: "s", Retry: engine.RetryPolicy{MaxRetries: 1},
		Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			info, _ := dag.Info(ctx)
			if info.Attempt == 1 {
				exits.Add(1)
				runtime.Goexit()
			}
			return engine.Encode(info.Attempt)
		},
	}}}
	never := &engine.Definition{Name: "goexit-always", Steps: []engine.Step{{
		Name: "s", Run: func(context.Context, engine.StepInput) ([]byte, error) {
			runtime.Goexit()
			return nil, nil
		},
	}}}
	e, err := engine.New(open(), &engine.Config{Concurrency: 2, PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Register(never))
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
	})

	var ids []dag.RunID
	for i := range 6 { // three times the slots
		id, err := e.Trigger(ctx, "goexit", "t", i)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	for _, id := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
		require.Equal(t, 2, res.Tasks["s"].Attempt, "the attempt that exited counted as a failed one")
	}
	require.Equal(t, int64(6), exits.Load())

	id, err := e.Trigger(ctx, "goexit-always", "t", 0)
	require.NoError(t, err)
	_, err = e.Wait(ctx, id)
	require.ErrorIs(t, err, engine.ErrRunFailed, "without retries, an attempt that exits fails the run")
	res, err := e.Result(ctx, id)
	require.NoError(t, err)
	require.Contains(t, res.Tasks["s"].Error, "runtime.Goexit")
}
