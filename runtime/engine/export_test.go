package engine

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine/internal/tracing"
	"github.com/dagenhq/dagen/runtime/store"
)

// Waiters returns how many Waits for run id are registered: tests wait for
// a Wait to be under way before they let its run finish.
func (e *Engine) Waiters(id dag.RunID) int {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	return len(e.waiters[id])
}

// HoldsTaskOf reports whether the engine holds a task of run id (see
// holdsTaskOf): a run whose trigger found no free slot (a claim under way
// had taken them) is held only once a claim takes its step.
func (e *Engine) HoldsTaskOf(id dag.RunID) bool { return e.holdsTaskOf(id) }

// TraceAttempt starts and ends the span of an attempt of ct, as
// executeMeasured does around the step.
func TraceAttempt(e *Engine, ct *store.ClaimedTask) {
	_, span := e.tracer.Attempt(context.Background(), ct, stepOf(ct))
	res := store.TaskResult{Outcome: store.OutcomeCompleted}
	tracing.End(span, &res, "completed", true, time.Time{})
}
