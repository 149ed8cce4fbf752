package engine

import (
	"slices"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// A waiter is a Wait for a run that has not finished: ch is closed when
// the run finishes on this engine, or is cancelled by it. When the
// completion that finished the run read it back
// (store.TaskResult.ReturnRun), run holds it, set before ch closes; Wait
// then needs no read of its own.
type waiter struct {
	ch  chan struct{}
	run *store.FinishedRun
}

// addWaiter registers a waiter for run id, and reports whether this
// engine held a task of the run as it did (see holdsTaskOf): then the run
// had not finished, and the completion that finishes it here hands the
// waiter the run. Both happen under waitMu, which finished takes: checked
// later, the task may be gone because the run finished meanwhile, and the
// caller would read the status and the run it was handed.
func (e *Engine) addWaiter(id dag.RunID) (w *waiter, held bool) {
	w = &waiter{ch: make(chan struct{})}
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	e.waiters[id] = append(e.waiters[id], w)
	return w, e.holdsTaskOf(id)
}

// dropWaiter removes a waiter that stopped waiting.
func (e *Engine) dropWaiter(id dag.RunID, w *waiter) {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	ws := slices.DeleteFunc(e.waiters[id], func(x *waiter) bool { return x == w })
	if len(ws) == 0 {
		delete(e.waiters, id)
	} else {
		e.waiters[id] = ws
	}
}

// notify wakes the waiters of run id, which read it.
func (e *Engine) notify(id dag.RunID) { e.finished(id, nil) }

// finished wakes the waiters of run id, and gives the first the run read
// back by the completion that finished it, when it was: the others read
// it, so that no two results share the outputs' bytes.
func (e *Engine) finished(id dag.RunID, run *store.FinishedRun) {
	e.waitMu.Lock()
	ws := e.waiters[id]
	delete(e.waiters, id)
	e.waitMu.Unlock()
	for i, w := range ws {
		if i == 0 {
			w.run = run
		}
		close(w.ch)
	}
}

// askReturns sets ReturnRun on the results of runs someone waits for
// here: the completion that finishes one reads it back for its waiters.
func (e *Engine) askReturns(batch []store.TaskResult) {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	if len(e.waiters) == 0 {
		return
	}
	for i := range batch {
		_, waited := e.waiters[batch[i].RunID]
		batch[i].ReturnRun = waited
	}
}

// holdsTaskOf reports whether this engine holds a task of run id, claimed
// and not yet stored: should that task finish the run, its completion
// wakes the run's waiters, which it unholds first (see the worker's
// completeBatch).
func (e *Engine) holdsTaskOf(id dag.RunID) bool {
	w := e.running()
	return w != nil && w.Holds(id)
}
