package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// TestWaitTakesTheRunFromItsCompletion waits for runs that finish while
// Wait waits: the completion that finishes one reads it back for its
// waiter (store.TaskResult.ReturnRun), and Wait returns that, completed
// or failed, without reading the run itself; nor does it read the run's
// status first, as the run's first step is held here.
func TestWaitTakesTheRunFromItsCompletion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := &engine.ReadCounter{Store: memstore.New(nil)}
	release := make(chan struct{})
	def := &engine.Definition{Name: "wf", Steps: []engine.Step{
		{Name: "a", Run: fn(func(_ context.Context, in int, _ []string) (string, error) {
			<-release
			return "a", nil
		})},
		{Name: "b", Parents: req("a"), Run: fn(func(_ context.Context, in int, _ []string) (string, error) {
			if in < 0 {
				return "", errors.New("boom")
			}
			return "b", nil
		})},
	}}
	// No poll of the status while the step runs: its completion is what
	// wakes Wait. (Eager start and continuation run the steps.)
	e, err := engine.New(st, &engine.Config{WorkerID: "w1", Concurrency: 4, PollInterval: time.Minute})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})

	for _, in := range []int{1, -1} {
		release = make(chan struct{})
		id, err := e.Trigger(ctx, "wf", "t", in)
		require.NoError(t, err)
		// The run's first step is held here: started by the trigger, or,
		// when a claim under way had taken the free slots, by the claim
		// the trigger's enqueue wakes. It runs until release.
		require.Eventually(t, func() bool { return e.HoldsTaskOf(id) }, 10*time.Second, time.Millisecond)
		statuses := st.Statuses.Load()
		type waited struct {
			res *engine.RunResult
			err error
		}
		done := make(chan waited, 1)
		go func() {
			res, err := e.Wait(ctx, id)
			done <- waited{res, err}
		}()
		// Wait is registered: it waits to be woken.
		require.Eventually(t, func() bool { return e.Waiters(id) == 1 }, 10*time.Second, time.Millisecond)
		reads := st.Reads.Load()
		close(release)
		w := <-done
		require.NotNil(t, w.res)
		require.Equal(t, reads, st.Reads.Load(), "Wait read nothing after it was woken")
		require.Equal(t, statuses, st.Statuses.Load(), "nor the status: the run's first step was held here")
		want, err := e.Result(ctx, id)
		if in < 0 {
			require.ErrorAs(t, w.err, new(*engine.RunError))
			require.Equal(t, store.RunFailed, w.res.Status)
		} else {
			require.NoError(t, w.err)
			require.Equal(t, store.RunCompleted, w.res.Status)
			require.NoError(t, err)
		}
		require.Equal(t, want, w.res, "the result is the run as it was stored")
	}
}
