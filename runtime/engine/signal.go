package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// Signal sends payload to step, a signal wait (KindSignal) of run id of
// workflow. The wait resolves with the payload as its output when it
// waits already; a signal sent before the run reaches the wait is held
// and used when it does. Generated code calls it from Send<Type> on the
// typed handle.
//
// Errors: an unknown run wraps store.ErrRunNotFound; a run of another
// workflow, or a step that is not a signal wait of the run, wraps
// store.ErrNotSignal; a wait resolved already (signalled, timed out,
// skipped or cancelled) wraps store.ErrSignalResolved; a second signal
// held for a wait not reached yet wraps store.ErrSignalHeld; a finished
// run wraps store.ErrRunFinished. Concurrent sends to one wait, from any
// number of processes, resolve it exactly once: the others get one of
// these errors.
func (e *Engine) Signal(ctx context.Context, workflow string, id dag.RunID, step string, payload any) error {
	b, err := encodeInput(payload)
	if err != nil {
		return fmt.Errorf("signal %s of run %s: %w", step, id, err)
	}
	return e.SignalRaw(ctx, workflow, id, step, b)
}

// SignalRaw is Signal with the payload encoded already (as JSON).
func (e *Engine) SignalRaw(ctx context.Context, workflow string, id dag.RunID, step string, payload []byte) error {
	if err := e.checkPayload("the signal's payload", payload); err != nil {
		return fmt.Errorf("signal %s of run %s: %w", step, id, err)
	}
	if workflow != "" {
		run, err := e.store.GetRun(ctx, id)
		if err != nil {
			return fmt.Errorf("signal %s of run %s: %w", step, id, err)
		}
		if run.Workflow != workflow {
			return fmt.Errorf("signal %s of run %s: the run is of workflow %q, not %q: %w", step, id, run.Workflow, workflow, store.ErrNotSignal)
		}
	}
	delivered, err := e.store.SendSignal(ctx, id, step, payload)
	if err != nil {
		return fmt.Errorf("signal %s of run %s: %w", step, id, err)
	}
	if delivered {
		e.wakeLoop() // its children may be ready
	}
	return nil
}

// awaitSignal is the result of a signal wait's attempt once its parents
// are resolved: wait for the signal, for SignalTimeout when it is set.
func awaitSignal(step *Step, res store.TaskResult) store.TaskResult {
	res.Outcome, res.Delay = store.OutcomeAwait, step.SignalTimeout
	if step.SignalTimeout > 0 {
		res.Reason = NoSignal(step.SignalTimeout)
	}
	return res
}

// NoSignal is the skip reason of a signal wait that timed out after d:
// "no signal within 72h".
func NoSignal(d time.Duration) string { return "no signal within " + store.ShortDuration(d) }
