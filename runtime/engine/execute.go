package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine/internal/meters"
	"github.com/dagenhq/dagen/runtime/engine/internal/tracing"
	"github.com/dagenhq/dagen/runtime/engine/internal/worker"
	"github.com/dagenhq/dagen/runtime/store"
)

// unknownWorkflowDelay is how long a task of a workflow this worker does
// not know waits before it is enqueued again for another worker.
const unknownWorkflowDelay = 5 * time.Second

// stoppedBy reports whether ctx ended because the engine was stopped, as
// opposed to the run being cancelled or the step timing out.
func stoppedBy(ctx context.Context) bool { return errors.Is(context.Cause(ctx), worker.ErrStopped) }

// executeMeasured is execute, recording the attempt's outcome and
// duration (internal/meters) under its step's name: a mapped step's
// elements count as the step. The attempt has a span (internal/tracing)
// when its run has a trace context; the step's ctx carries it.
func (e *Engine) executeMeasured(ctx context.Context, ct *store.ClaimedTask) (store.TaskResult, bool) {
	began := time.Now()
	ctx, span := e.tracer.Attempt(ctx, ct, stepOf(ct))
	if span != nil {
		// A step that calls runtime.Goexit never returns here; its
		// deferred calls run all the same.
		defer tracing.EndGoexit(span)
	}
	res, keep := e.execute(ctx, ct)
	if keep || span != nil {
		outcome := meters.Outcome(res.Outcome, strings.HasPrefix(res.Error, timedOutPrefix))
		took := time.Since(began)
		if keep {
			e.meters.Step(ct.Workflow, stepOf(ct), outcome, took)
		}
		tracing.End(span, &res, outcome, keep, began.Add(took))
	}
	return res, keep
}

// timedOutPrefix begins the error of an attempt its step's timeout ended.
const timedOutPrefix = "timed out after "

// execute runs one claimed task and returns the result to store, and
// whether to store it. An attempt that failed because Stop cancelled it is
// not the step's failure: its result is not stored, and the task is left
// to Stop, which releases it to another worker without spending a retry.
// execute never panics: a panicking step is a failed attempt.
func (e *Engine) execute(ctx context.Context, ct *store.ClaimedTask) (store.TaskResult, bool) {
	res := store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim}
	fail := func(err error) (store.TaskResult, bool) {
		res.Outcome, res.Error = store.OutcomeFailed, err.Error()
		return res, true
	}
	reg := e.lookup(ct.Workflow)
	if reg == nil {
		// Claims ask only for registered workflows, so only a store that
		// ignored the filter gets here. The task is not this worker's to
		// fail: hand it back, after a delay, for a worker that knows it.
		res.Outcome, res.Delay = store.OutcomeRetry, unknownWorkflowDelay
		res.Error = fmt.Sprintf("workflow %q is not registered on worker %s; handed back for another worker", ct.Workflow, e.cfg.WorkerID)
		e.log.Error("dagen: claimed a task of a workflow not registered here; handing it back",
			tracing.LogArgs(ct, "worker", e.cfg.WorkerID)...)
		return res, true
	}
	if !reg.serves(ct) {
		// Claims ask only for signatures registered here, so only a store
		// that ignored them gets here. Running the step could hand it
		// another step's data, and failing it would fail a run some other
		// worker could finish: hand it back for one whose code has the
		// signature.
		res.Outcome, res.Delay = store.OutcomeRetry, unknownWorkflowDelay
		res.Error = fmt.Sprintf("step %s (signature %s) of workflow %q is not served by worker %s (fingerprint %s); handed back for another worker",
			ct.Step, ct.Signature, ct.Workflow, e.cfg.WorkerID, reg.fp)
		e.log.Error("dagen: claimed a task whose signature no registered definition has; handing it back",
			tracing.LogArgs(ct, "worker", e.cfg.WorkerID, "signature", ct.Signature)...)
		return res, true
	}
	parent := ctx
	ctx = e.enterRun(ctx, ct.RunID)
	defer e.leaveRun(ct.RunID)

	in := StepInput{
		Info:    dag.StepInfo{RunID: ct.RunID, Workflow: ct.Workflow, Step: ct.Step, Tenant: ct.Tenant, Attempt: ct.Attempt},
		Input:   ct.Input,
		Parents: ct.Parents,
	}
	if ct.Kind == store.KindElement {
		in.Info.Step = stepOf(ct)
		in.Info.Mapped, in.Info.Element = true, ct.Element
	}
	ctx = dag.WithInfo(ctx, in.Info)

	if ct.Kind == store.KindOnFailure {
		if reg.def.OnFailure == nil || ct.Failure == nil {
			return fail(errors.New("onfailure task without handler or failure"))
		}
		if err := protect(func() error { return reg.def.OnFailure(ctx, in, *ct.Failure) }); err != nil {
			if stoppedBy(ctx) {
				return res, false
			}
			return fail(fmt.Errorf("onfailure: %w", err))
		}
		res.Outcome = store.OutcomeCompleted
		return res, true
	}

	step := reg.steps[in.Info.Step]
	if ct.Kind == store.KindElement {
		return e.runStep(parent, ctx, reg, step, in, res)
	}
	if reason, skip := cascade(step, ct.Parents); skip {
		res.Outcome, res.Reason = store.OutcomeSkipped, reason
		return res, true
	}
	for _, p := range step.Skip {
		var skip bool
		err := protect(func() (err error) { skip, err = p.Eval(ctx, in); return err })
		if err != nil {
			return e.failed(parent, ctx, step, res, fmt.Errorf("skip predicate %s: %w", p.Name, err))
		}
		if skip {
			res.Outcome, res.Reason = store.OutcomeSkipped, "skip="+p.Name
			return res, true
		}
	}
	switch ct.Kind {
	case store.KindMap:
		return e.mapStep(step, in, res)
	case store.KindSignal:
		return awaitSignal(step, res), true
	}
	return e.runStep(parent, ctx, reg, step, in, res)
}

// runStep runs a step's function (or a sleep's) for an attempt whose
// cascade and predicates said to run it: parent is the context execute was
// called with, ctx the attempt's.
func (e *Engine) runStep(parent, ctx context.Context, reg *registered, step *Step, in StepInput, res store.TaskResult) (store.TaskResult, bool) {
	timeout := step.Timeout
	if timeout == 0 {
		timeout = e.cfg.StepTimeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var err error
	switch step.Kind {
	case KindSleep:
		var w Wake
		err = protect(func() (err error) { w, err = step.Sleep(ctx, in); return err })
		if err == nil {
			res.Outcome, res.WakeAt, res.Delay = store.OutcomeSleep, w.At, w.Delay
			return res, true
		}
	default:
		var out []byte
		err = protect(func() (err error) { out, err = step.Run(ctx, in); return err })
		if err == nil {
			err = e.checkOutput(in.Info.Step, out)
		}
		if err == nil && step.Kind == KindChild {
			return e.startChild(ctx, step, in, res, out)
		}
		if err == nil && !in.Info.Mapped {
			// An element's output is one of the step's; the mapped step
			// that maps their array checks it when it maps.
			err = e.checkMappable(reg, step, out)
		}
		if err == nil {
			res.Outcome, res.Output = store.OutcomeCompleted, out
			return res, true
		}
	}
	if timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf(timedOutPrefix+"%s: %w", timeout, err)
	}
	return e.failed(parent, ctx, step, res, err)
}

// failed turns an attempt's error into a retry or a failure for good, or,
// when the attempt's ctx (stepCtx) was cancelled by Stop, into nothing to
// store. Attempts released by stopping workers do not count against the
// retries; ctx is the context execute was called with.
func (e *Engine) failed(ctx, stepCtx context.Context, step *Step, res store.TaskResult, err error) (store.TaskResult, bool) {
	if stoppedBy(stepCtx) {
		return res, false
	}
	res.Error = err.Error()
	if dag.IsTerminal(err) {
		res.Outcome = store.OutcomeFailed
		return res, true
	}
	counted := res.Attempt
	if counted > 1 {
		// Attempts before this one may have been released: they count
		// neither against the retries nor toward the backoff. A first
		// attempt has none before it, so only a retry's failure reads them.
		counted -= e.releasedAttempts(ctx, stepCtx, res.RunID, res.Step)
	}
	if counted > step.Retry.MaxRetries {
		res.Outcome = store.OutcomeFailed
		return res, true
	}
	res.Outcome, res.Delay = store.OutcomeRetry, step.Retry.Delay(counted)
	return res, true
}

// releasedAttempts counts the attempts of a step that stopping workers
// released (store.Workers.RetireWorker), or that never reached their worker
// (released by store.Workers.Heartbeat): they were cut short, not failed.
// The attempts before an operator's retry of the run (a RETRIED event, whose
// Attempt is the count at the retry) count as released too: a retried
// task's retries start over. It reads the run's event log, so it is asked
// only after an attempt that was not the first. When the log cannot be read it counts none.
// stepCtx, the attempt's, names the run's workflow, tenant and trace in
// the log.
func (e *Engine) releasedAttempts(ctx, stepCtx context.Context, id dag.RunID, step string) int {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	events, err := e.store.ListEvents(ctx, id)
	if err != nil {
		e.log.Error("dagen: read events to count released attempts failed; counting none",
			tracing.CtxLogArgs(stepCtx, id, step, "worker", e.cfg.WorkerID, "err", err)...)
		return 0
	}
	n := 0
	for _, ev := range events {
		if ev.Step != step {
			continue
		}
		switch {
		case ev.Type == store.EventRetried:
			// An operator retried the run (store.Retrier): the attempts
			// before it do not count, and the count starts over.
			n = ev.Attempt
		case ev.Type == store.EventRescued && (ev.Detail == store.ReleasedDetail || ev.Detail == store.NotHeldDetail || ev.Detail == store.UnclaimedDetail):
			n++
		}
	}
	return n
}

// cascade applies the first two rows of the truth table: a skipped required
// parent, or every parent skipped, skips the step. Parents are matched by
// name; one the step does not list counts as required.
func cascade(step *Step, parents []store.ParentResult) (reason string, skip bool) {
	if len(parents) == 0 {
		return "", false
	}
	all := true
	for _, p := range parents {
		if p.Status != store.TaskSkipped {
			all = false
			continue
		}
		if !step.optional(p.Step) {
			return "parent " + p.Step + " skipped", true
		}
	}
	if all {
		return "all parents skipped", true
	}
	return "", false
}

// optional reports whether the step takes parent name as optional.
func (s *Step) optional(name string) bool {
	for _, p := range s.Parents {
		if p.Name == name {
			return p.Optional
		}
	}
	return false
}

// serves reports whether this definition may run the claimed task: its
// signature is the step's, or the task predates signatures (legacy) and
// the definition has its shape, with the same parents.
func (r *registered) serves(ct *store.ClaimedTask) bool {
	if sig, ok := r.sigs[stepOf(ct)]; ok && sig == ct.Signature {
		return true
	}
	if !slices.Contains(r.served, ct.Signature) || !strings.HasPrefix(ct.Signature, "legacy:") {
		return false
	}
	if ct.Kind == store.KindOnFailure {
		return r.def.OnFailure != nil
	}
	step := r.steps[ct.Step]
	if step == nil || len(step.Parents) != len(ct.Parents) {
		return false
	}
	for _, p := range ct.Parents {
		if !slices.ContainsFunc(step.Parents, func(q Parent) bool { return q.Name == p.Step }) {
			return false
		}
	}
	return true
}

// stepOf is the stored name of the step a claimed task runs: an element's
// is its mapped step's.
func stepOf(ct *store.ClaimedTask) string {
	if ct.Kind == store.KindElement {
		if step, _, ok := store.ParseElement(ct.Step); ok {
			return step
		}
	}
	return ct.Step
}

// errGoexit is the error of an attempt whose step called runtime.Goexit.
var errGoexit = errors.New("the step called runtime.Goexit (t.FailNow or a log.Fatal-like helper?): its goroutine ended without returning")

// goexited is the result of an attempt whose step called runtime.Goexit:
// a failed attempt, retried by the step's policy as a panic is (or, when
// Stop was cutting it short, nothing to store, as failed says).
func (e *Engine) goexited(ctx context.Context, ct *store.ClaimedTask) (store.TaskResult, bool) {
	res := store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim}
	reg := e.lookup(ct.Workflow)
	var step *Step
	if reg != nil && ct.Kind != store.KindOnFailure {
		step = reg.steps[stepOf(ct)]
	}
	if step == nil {
		res.Outcome, res.Error = store.OutcomeFailed, errGoexit.Error()
		return res, true
	}
	return e.failed(ctx, ctx, step, res, errGoexit)
}

// protect calls f, turning a panic into an error with its stack.
func protect(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return f()
}
