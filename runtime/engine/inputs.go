package engine

import (
	"container/list"
	"context"
	"sync"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine/internal/tracing"
	"github.com/dagenhq/dagen/runtime/store"
)

// Sizes of the inputs cache: inputs of at least cachedInputMin bytes are
// kept, up to cachedInputBytes in all, the least recently claimed dropped
// first. Only large inputs are worth it: each claim names the runs whose
// input the worker holds (store.ClaimParams.Known), at most
// cachedInputBytes/cachedInputMin of them.
const (
	cachedInputMin   = 256 << 10
	cachedInputBytes = 64 << 20
)

// inputCache holds the large inputs of runs this worker claimed steps of,
// so that the next claims of those runs leave the input out: a 20 MiB
// input crosses the wire and is decoded by the driver once for the
// worker, not once a step.
type inputCache struct {
	mu    sync.Mutex
	order *list.List // of *cachedInput, most recently used first
	byRun map[dag.RunID]*list.Element
	bytes int
}

type cachedInput struct {
	run   dag.RunID
	input []byte
}

func newInputCache() *inputCache {
	return &inputCache{order: list.New(), byRun: map[dag.RunID]*list.Element{}}
}

// known returns the runs whose input the cache holds, for a claim, and
// those inputs: the caller fills the claimed tasks from them (fill), so an
// input dropped from the cache meanwhile is not lost.
func (c *inputCache) known() ([]dag.RunID, map[dag.RunID][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byRun) == 0 {
		return nil, nil
	}
	ids := make([]dag.RunID, 0, len(c.byRun))
	held := make(map[dag.RunID][]byte, len(c.byRun))
	for id, el := range c.byRun {
		ids = append(ids, id)
		held[id] = el.Value.(*cachedInput).input
	}
	return ids, held
}

// fill gives the tasks claimed without their input (InputOmitted) the
// input held for their run, and keeps the large inputs of the others. It
// returns the indexes of tasks whose input is neither held nor sent,
// which the store should not leave out.
func (c *inputCache) fill(tasks []store.ClaimedTask, held map[dag.RunID][]byte) (missing []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range tasks {
		t := &tasks[i]
		if t.InputOmitted {
			in, ok := held[t.RunID]
			if !ok {
				missing = append(missing, i)
				continue
			}
			t.Input, t.InputOmitted = in, false
		}
		c.touch(t.RunID, t.Input)
	}
	return missing
}

// touch marks run's input as just used, keeping it when it is large. The
// caller holds mu.
func (c *inputCache) touch(run dag.RunID, input []byte) {
	if el, ok := c.byRun[run]; ok {
		c.order.MoveToFront(el)
		return
	}
	if len(input) < cachedInputMin || len(input) > cachedInputBytes {
		return
	}
	c.byRun[run] = c.order.PushFront(&cachedInput{run: run, input: input})
	c.bytes += len(input)
	for c.bytes > cachedInputBytes {
		last := c.order.Back()
		ci := last.Value.(*cachedInput)
		c.order.Remove(last)
		delete(c.byRun, ci.run)
		c.bytes -= len(ci.input)
	}
}

// claimTasks claims tasks as p says, naming the runs whose input this worker
// holds, and returns them with every input in place.
func (e *Engine) claimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	var held map[dag.RunID][]byte
	p.Known, held = e.inputs.known()
	tasks, err := e.store.ClaimTasks(ctx, p)
	if err != nil {
		return tasks, err
	}
	return e.fillInputs(ctx, tasks, held), nil
}

// fillInputs gives claimed tasks the inputs left out of them, from held
// (the inputs the claim named as known) or, for one not there, from the
// store, and keeps their large inputs.
func (e *Engine) fillInputs(ctx context.Context, tasks []store.ClaimedTask, held map[dag.RunID][]byte) []store.ClaimedTask {
	for _, i := range e.inputs.fill(tasks, held) {
		// Not expected of a store; read the input rather than leave the
		// claimed task without one.
		t := &tasks[i]
		run, err := e.store.GetRun(ctx, t.RunID)
		if err != nil {
			e.log.Error("dagen: a claimed step came without its run's input and the run cannot be read; the attempt fails",
				tracing.LogArgs(t, "worker", e.cfg.WorkerID, "err", err)...)
			continue
		}
		t.Input, t.InputOmitted = run.Input, false
	}
	return tasks
}
