package engine_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// knownSpy records, for each claimed task (from the queue, or continued
// by the completion of its parent), whether the claim named its run as
// Known and whether the store left its input out.
type knownSpy struct {
	store.Store
	mu      sync.Mutex
	named   map[string]bool // step -> its claim named its run
	omitted map[string]bool // step -> the store left its input out
}

func (s *knownSpy) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	tasks, err := s.Store.ClaimTasks(ctx, p)
	s.record(p, tasks)
	return tasks, err
}

func (s *knownSpy) CompleteAndContinue(ctx context.Context, results []store.TaskResult, p store.ClaimParams) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	outs, tasks, err := s.Store.CompleteAndContinue(ctx, results, p)
	s.record(p, tasks)
	return outs, tasks, err
}

func (s *knownSpy) record(p store.ClaimParams, tasks []store.ClaimedTask) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tasks {
		s.named[t.Step] = slices.Contains(p.Known, t.RunID)
		s.omitted[t.Step] = t.InputOmitted
	}
}

func TestLargeInputSentOnce(t *testing.T) {
	eachStore(t, testLargeInputSentOnce)
}

// testLargeInputSentOnce runs a 3-step chain whose input is large: once
// the worker holds it, its claims name the run as Known, and every step
// still reads the whole input, left out by the store (Postgres) or not
// (memstore, where sending it costs nothing).
func testLargeInputSentOnce(t *testing.T, open func() store.Store) {
	ctx := context.Background()
	spy := &knownSpy{Store: open(), named: map[string]bool{}, omitted: map[string]bool{}}
	var mu sync.Mutex
	seen := map[string]int{}
	read := func(ctx context.Context, in engine.StepInput) ([]byte, error) {
		s, err := engine.Input[string](in)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		seen[in.Info.Step] = len(s)
		mu.Unlock()
		return engine.Encode(len(s))
	}
	e, err := engine.New(spy, &engine.Config{Manual: true})
	require.NoError(t, err)
	require.NoError(t, e.Register(&engine.Definition{Name: "large", Steps: []engine.Step{
		{Name: "a", Run: read}, {Name: "b", Parents: req("a"), Run: read}, {Name: "c", Parents: req("b"), Run: read},
	}}))
	input := strings.Repeat("x", 1<<20)
	id, err := e.Trigger(ctx, "large", "t", input)
	require.NoError(t, err)
	_, err = e.Wait(ctx, id)
	require.NoError(t, err)

	require.Equal(t, map[string]int{"a": len(input), "b": len(input), "c": len(input)}, seen, "every step reads the whole input")
	require.Equal(t, map[string]bool{"a": false, "b": true, "c": true}, spy.named, "claimed after a, the run is known")
	if _, pg := spy.Store.(*pgstore.Store); pg {
		require.Equal(t, map[string]bool{"a": false, "b": true, "c": true}, spy.omitted, "Postgres sends the input once")
	}
}
