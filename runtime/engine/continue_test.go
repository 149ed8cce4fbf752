package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestChainsContinueOnTheWorker runs chains on four workers sharing a
// store that continues (store.Continuer): a step's completion starts the
// next step on the worker that ran it. Every step runs exactly once, gets
// its parent's output, and most steps after the first never enter the
// queue: their STARTED event has the time of their QUEUED event, both
// logged by the unit that stored the parent's result.
func TestChainsContinueOnTheWorker(t *testing.T) {
	eachStore(t, testChainsContinueOnTheWorker)
}

func testChainsContinueOnTheWorker(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const runs, length = 200, 5
	var mu sync.Mutex
	ran := map[string]int{} // by run input and step
	steps := make([]engine.Step, length)
	for i := range steps {
		name := fmt.Sprintf("s%d", i)
		steps[i] = engine.Step{Name: name, Run: fn(func(_ context.Context, in int, parents []string) (string, error) {
			if i > 0 && parents[0] != fmt.Sprintf("%d/s%d", in, i-1) {
				return "", fmt.Errorf("run %d step %s: parent output %q", in, name, parents[0])
			}
			mu.Lock()
			ran[fmt.Sprintf("%d/%s", in, name)]++
			mu.Unlock()
			return fmt.Sprintf("%d/%s", in, name), nil
		})}
		if i > 0 {
			steps[i].Parents = req(fmt.Sprintf("s%d", i-1))
		}
	}
	def := func() *engine.Definition { return &engine.Definition{Name: "chain", Steps: steps} }
	var workers []*engine.Engine
	for i := range 4 {
		workers = append(workers, worker(t, open(), fmt.Sprintf("w%d", i), def()))
	}
	var reqs []engine.TriggerRequest
	for i := range runs {
		reqs = append(reqs, engine.TriggerRequest{Workflow: "chain", Tenant: "t", Input: i})
	}
	ids, err := workers[0].TriggerMany(ctx, reqs)
	require.NoError(t, err)
	continued := 0
	for _, id := range ids {
		res, err := workers[0].Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
		continued += continuedSteps(t, ctx, workers[0], id)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, ran, runs*length)
	for k, n := range ran {
		require.Equal(t, 1, n, "%s ran %d times", k, n)
	}
	t.Logf("continued %d of %d", continued, runs*(length-1))
	require.Greater(t, continued, runs*(length-1)/2, "most steps after the first continue on their worker")
}

// continuedSteps counts the steps of run id started by the unit that
// made them ready: STARTED at the time of QUEUED, in the same round.
func continuedSteps(t *testing.T, ctx context.Context, e *engine.Engine, id dag.RunID) int {
	t.Helper()
	events, err := e.Events(ctx, id)
	require.NoError(t, err)
	queued := map[string]time.Time{}
	n := 0
	for _, ev := range events {
		switch ev.Type {
		case store.EventQueued:
			queued[ev.Step] = ev.At
		case store.EventStarted:
			if at, ok := queued[ev.Step]; ok && at.Equal(ev.At) && ev.Step != "s0" {
				n++
			}
		}
	}
	return n
}
