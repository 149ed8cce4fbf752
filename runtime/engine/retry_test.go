package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func TestRetryFailedRun(t *testing.T) {
	eachStore(t, testRetryFailedRun)
}

// testRetryFailedRun: b fails for good, the bug is fixed, Retry(failed)
// runs b (whose retries start over: it fails once more and is retried) and
// d again, and the steps that completed do not run again.
func testRetryFailedRun(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var fixed atomic.Bool
	var runsA, runsB, runsC, runsD atomic.Int64
	count := func(n *atomic.Int64, out string) func(context.Context, engine.StepInput) ([]byte, error) {
		return fn(func(context.Context, int, []string) (string, error) { n.Add(1); return out, nil })
	}
	def := &engine.Definition{Name: "retried", Steps: []engine.Step{
		{Name: "a", Run: count(&runsA, "A")},
		{Name: "c", Run: count(&runsC, "C")},
		{Name: "b", Parents: req("a"), Retry: engine.RetryPolicy{MaxRetries: 1, Backoff: time.Millisecond},
			Run: fn(func(_ context.Context, _ int, ps []string) (string, error) {
				n := runsB.Add(1)
				if !fixed.Load() || n == 3 { // after the fix, a flaky first attempt
					return "", errors.New("bug")
				}
				return "B(" + ps[0] + ")", nil
			})},
		{Name: "d", Parents: req("b", "c"), Run: fn(func(_ context.Context, _ int, ps []string) (string, error) {
			runsD.Add(1)
			return ps[0] + ps[1], nil
		})},
	}}
	e := worker(t, open(), "w1", def)
	id, err := e.Trigger(ctx, "retried", "t", 1)
	require.NoError(t, err)
	_, err = e.Wait(ctx, id)
	var re *engine.RunError
	require.ErrorAs(t, err, &re)
	require.Equal(t, store.RunFailed, re.Status)
	require.Equal(t, "b", re.Failure.Step)
	require.Equal(t, int64(2), runsB.Load(), "b used its retry")

	fixed.Store(true)
	res, err := e.Retry(ctx, id, store.Retry{Mode: store.RetryFailed, Operator: "alice"})
	require.NoError(t, err)
	require.Equal(t, []string{"b", "d"}, res.Reset)
	require.Equal(t, []string{"b"}, res.Enqueued)
	out, err := e.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, out.Status)
	require.Equal(t, "B(A)C", output(t, out, "d"))
	require.Equal(t, int64(1), runsA.Load(), "a is not run again")
	require.Equal(t, int64(1), runsC.Load(), "c is not run again")
	require.Equal(t, int64(4), runsB.Load(), "b failed once more and its retry (which started over) succeeded")
	require.Equal(t, int64(1), runsD.Load())

	_, err = e.Retry(ctx, id, store.Retry{Mode: store.RetryFailed})
	require.ErrorIs(t, err, store.ErrNotRetryable, "nothing failed")
}
