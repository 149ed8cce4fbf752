package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine/internal/slots"
	"github.com/dagenhq/dagen/runtime/engine/internal/worker"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// batchRecorder is a store that records the steps of each batch of results
// it stores, and holds the first until gate is closed.
type batchRecorder struct {
	store.Store
	gate chan struct{}

	mu      sync.Mutex
	batches [][]string
}

func (s *batchRecorder) CompleteTasks(ctx context.Context, results []store.TaskResult) ([]store.CompletionOutcome, error) {
	s.record(results)
	return s.Store.CompleteTasks(ctx, results)
}

func (s *batchRecorder) CompleteAndContinue(ctx context.Context, results []store.TaskResult, p store.ClaimParams) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	s.record(results)
	return s.Store.CompleteAndContinue(ctx, results, p)
}

// record waits for the gate, then records the steps of a batch.
func (s *batchRecorder) record(results []store.TaskResult) {
	<-s.gate
	steps := make([]string, len(results))
	for i, r := range results {
		steps[i] = r.Step
	}
	s.mu.Lock()
	s.batches = append(s.batches, steps)
	s.mu.Unlock()
}

// TestBatchesBoundTheRowsTheyMakeReady checks that a batch of results stops
// growing once the tasks its results make ready reach worker.MaxBatchRows: the
// results of fan-out roots of 101 children each, 252 of them waiting for
// the store (all the slots claims may fill: see slots.Slots.ClaimCapacity), go in
// batches of 41 at most (the 41st takes a batch past 4,096 rows), not of
// BatchSize (256). All but one of the children have a second parent, that
// one: a claim keeps no slots for them (store.ClaimParams.Extra), so it
// takes as many roots as it has slots.
func TestBatchesBoundTheRowsTheyMakeReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const concurrency, children = 256, 100
	runs := int64(slots.New(concurrency).ClaimCapacity())
	rec := &batchRecorder{Store: memstore.New(nil), gate: make(chan struct{})}
	e, err := New(rec, &Config{Concurrency: concurrency, BatchSize: concurrency, PollInterval: time.Millisecond, WorkerID: "w"})
	require.NoError(t, err)
	var roots atomic.Int64
	noop := func(context.Context, StepInput) ([]byte, error) { return Encode(1) }
	steps := []Step{{Name: "a", Run: func(context.Context, StepInput) ([]byte, error) {
		roots.Add(1)
		return Encode(1)
	}}}
	steps = append(steps, Step{Name: "z", Parents: []Parent{{Name: "a"}}, Run: noop})
	for i := range children {
		steps = append(steps, Step{Name: fmt.Sprintf("b%d", i), Parents: []Parent{{Name: "a"}, {Name: "z"}}, Run: noop})
	}
	require.NoError(t, e.Register(&Definition{Name: "fan", Steps: steps}))
	reqs := make([]TriggerRequest, runs)
	for i := range reqs {
		reqs[i] = TriggerRequest{Workflow: "fan", Tenant: "t", Input: 0}
	}
	ids, err := e.TriggerMany(ctx, reqs)
	require.NoError(t, err)
	require.NoError(t, e.Start(ctx))
	open := func() {
		select {
		case <-rec.gate:
		default:
			close(rec.gate)
		}
	}
	defer func() {
		open() // a failure below must not leave Stop waiting for the store
		_ = e.Stop(context.Background())
	}()
	// Every root runs; their results wait for the store.
	require.Eventually(t, func() bool { return roots.Load() == runs }, 20*time.Second, time.Millisecond)
	open()
	for _, id := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	most := 0
	for _, b := range rec.batches {
		n := 0
		for _, step := range b {
			if step == "a" {
				n++
			}
		}
		// A batch stops at the first result that takes it to
		// worker.MaxBatchRows: before it, its rows were fewer.
		require.Less(t, (n-1)*(2+children), worker.MaxBatchRows, "a batch of %d results, %d of them roots", len(b), n)
		most = max(most, n)
	}
	require.Equal(t, worker.MaxBatchRows/(2+children)+1, most, "roots in the largest batch")
}
