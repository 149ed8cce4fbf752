package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dagenhq/dagen/runtime/engine/internal/tracing"
	"github.com/dagenhq/dagen/runtime/store"
)

// ErrChildNotRegistered is wrapped by the error Start returns when a
// registered workflow runs another as a child (KindChild) and that one is
// not registered on the engine, or is registered with other types.
var ErrChildNotRegistered = errors.New("child workflow not registered")

// startChild turns the output of a child step's attempt, the encoded
// input of its child run, into the result that starts the run
// (store.OutcomeChild): a run of the child workflow under the run's
// tenant, keyed by the attempt (store.ChildKey), so that the attempt
// starts one child however often its result is stored, and joined to the
// attempt's trace.
func (e *Engine) startChild(ctx context.Context, step *Step, in StepInput, res store.TaskResult, childIn []byte) (store.TaskResult, bool) {
	child := e.lookup(step.Child.Workflow)
	if err := childMatches(step, child); err != nil {
		// Start refuses this, so only a workflow registered after Start
		// gets here: hand the task back for a worker that has the child.
		res.Outcome, res.Delay = store.OutcomeRetry, unknownWorkflowDelay
		res.Error = fmt.Sprintf("%v; handed back for another worker", err)
		e.log.Error("dagen: a child step's workflow is not registered here; handing it back",
			tracing.CtxLogArgs(ctx, res.RunID, res.Step, "worker", e.cfg.WorkerID, "err", err)...)
		return res, true
	}
	req := TriggerRequest{Workflow: child.def.Name, Tenant: in.Info.Tenant, Key: store.ChildKey(res.RunID, res.Step, res.Attempt)}
	nr, err := newRun(child, in.Info.Tenant, childIn, req)
	if err != nil {
		res.Outcome, res.Error = store.OutcomeFailed, fmt.Sprintf("start child run of %s: %v", child.def.Name, err)
		return res, true
	}
	nr.TraceParent = tracing.TraceParent(ctx)
	nr.Parent = &store.ParentLink{Run: res.RunID, Task: res.Step, Attempt: res.Attempt, Claim: res.Claim, Result: step.Child.Result}
	e.recordOnce(ctx, child)
	res.Outcome, res.Child = store.OutcomeChild, &nr
	return res, true
}

// childMatches checks that child, the registered definition of step's
// child workflow (nil: none), is the one step was built for: its input
// type, and its result step with the output type step's children read.
func childMatches(step *Step, child *registered) error {
	c := step.Child
	if child == nil {
		return fmt.Errorf("step %q runs workflow %q as a child: %w on this engine: register it too (New%sWorkflow, or Register)",
			step.Name, c.Workflow, ErrChildNotRegistered, c.Workflow)
	}
	if c.InputType != "" && child.def.InputType != "" && c.InputType != child.def.InputType {
		return fmt.Errorf("step %q runs workflow %q with input %s, but the registered %q takes %s: %w with those types: run go generate",
			step.Name, c.Workflow, c.InputType, c.Workflow, child.def.InputType, ErrChildNotRegistered)
	}
	if c.Result == "" {
		return nil
	}
	rs := child.steps[c.Result]
	if rs == nil {
		return fmt.Errorf("step %q takes the output of step %q of workflow %q, which has no such step: %w with that step: run go generate",
			step.Name, c.Result, c.Workflow, ErrChildNotRegistered)
	}
	if got := rs.outputAsParent(); step.OutputType != "" && got != "" && got != step.OutputType {
		return fmt.Errorf("step %q takes %s from step %q of workflow %q, which gives %s: %w with that type: run go generate",
			step.Name, step.OutputType, c.Result, c.Workflow, got, ErrChildNotRegistered)
	}
	return nil
}

// checkChildren checks that every child workflow of the registered
// workflows is registered, with the types their steps were built for.
func (e *Engine) checkChildren() error {
	e.mu.RLock()
	regs := make([]*registered, 0, len(e.defs))
	for _, r := range e.defs {
		regs = append(regs, r)
	}
	e.mu.RUnlock()
	slices.SortFunc(regs, func(a, b *registered) int { return strings.Compare(a.def.Name, b.def.Name) })
	var errs []error
	for _, r := range regs {
		for i := range r.def.Steps {
			s := &r.def.Steps[i]
			if s.Kind != KindChild || s.Child == nil {
				continue
			}
			if err := childMatches(s, e.lookup(s.Child.Workflow)); err != nil {
				errs = append(errs, fmt.Errorf("engine: workflow %q: %w", r.def.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}
