package engine

import "github.com/dagenhq/dagen/runtime/dag"

// Waiters returns how many Waits for run id are registered: tests wait for
// a Wait to be under way before they let its run finish.
func (e *Engine) Waiters(id dag.RunID) int {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	return len(e.waiters[id])
}
