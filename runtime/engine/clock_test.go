package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// timerCounter counts the worker's FireTimers calls.
type timerCounter struct {
	store.Store
	fires atomic.Int64
}

func (c *timerCounter) FireTimers(ctx context.Context, limit int) (int, error) {
	c.fires.Add(1)
	return c.Store.FireTimers(ctx, limit)
}

// TestStoreClockBehindDoesNotSpin runs a worker whose store's clock is an
// hour behind its own, with a timer that is due on the worker's clock but
// not on the store's: the worker polls at its poll interval, not without
// a pause, as it once did (see docs/performance.md, "Tests: figures from
// their comments").
func TestStoreClockBehindDoesNotSpin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := &timerCounter{Store: memstore.New(&memstore.Config{Now: func() time.Time { return time.Now().Add(-time.Hour) }})}
	def := &engine.Definition{Name: "skew", Steps: []engine.Step{{
		Name: "nap", Kind: engine.KindSleep,
		Sleep: func(context.Context, engine.StepInput) (engine.Wake, error) {
			return engine.Wake{At: time.Now().Add(-30 * time.Minute)}, nil // past here, 30 min ahead for the store
		},
	}}}
	e, err := engine.New(st, &engine.Config{Concurrency: 4, PollInterval: 10 * time.Millisecond, DisableNotify: true})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
	})
	id, err := e.Trigger(ctx, "skew", "t", 1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res, err := e.Result(ctx, id)
		return err == nil && res.Tasks["nap"].Status == store.TaskSleeping
	}, 10*time.Second, time.Millisecond)

	before := st.fires.Load()
	time.Sleep(500 * time.Millisecond)
	fires := st.fires.Load() - before
	// About 50 rounds at a 10 ms interval; a spinning poller makes
	// orders of magnitude more. The bound is generous for a loaded host.
	require.Less(t, fires, int64(1000), "FireTimers calls in 0.5 s")
}
