package engine

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine/internal/worker"
	"github.com/dagenhq/dagen/runtime/store"
)

// Start starts working the registered workflows in the background until
// Stop (internal/worker). ctx is used only for values: cancelling it does
// not stop the engine.
func (e *Engine) Start(ctx context.Context) error {
	if e.cfg.Manual {
		return ErrManual
	}
	e.loopMu.Lock()
	defer e.loopMu.Unlock()
	if e.worker != nil {
		return ErrAlreadyStarted
	}
	if err := e.checkChildren(); err != nil {
		return err
	}
	e.published = nil
	e.worker = worker.Start(ctx, worker.Config{
		Store: e.store, Elector: e.elector, Log: e.log, Health: e.health, Leading: &e.leading,
		WorkerID: e.cfg.WorkerID, Concurrency: e.cfg.Concurrency, BatchSize: e.cfg.BatchSize,
		PollInterval: e.cfg.PollInterval, IdlePollInterval: e.cfg.IdlePollInterval, SchedulePollInterval: e.cfg.SchedulePollInterval,
		HeartbeatInterval: e.cfg.HeartbeatInterval, Lease: e.cfg.Lease, Retention: e.cfg.Retention,
		Meters:            e.meters,
		DisableEagerStart: e.cfg.DisableEagerStart, DisableEagerContinue: e.cfg.DisableEagerContinue, DisableNotify: e.cfg.DisableNotify,
	}, host{e})
	e.stopping = false
	return nil
}

// Stop stops claiming and gives up leadership, lets the steps in flight
// finish and stores their results, heartbeating all the while so that
// their tasks stay with this worker, then retires the worker. When ctx ends
// first, the steps' contexts are cancelled and Stop returns without waiting
// for them: their tasks are released to other workers at once, and a late
// result of theirs is fenced off. A step that fails because of that
// cancellation has not failed: its result is dropped, and the released
// attempt does not count against its retries.
func (e *Engine) Stop(ctx context.Context) error {
	e.loopMu.Lock()
	w := e.worker
	if w == nil || e.stopping {
		e.loopMu.Unlock()
		return ErrNotStarted
	}
	e.stopping = true
	w.BeginStop()
	e.loopMu.Unlock()
	err := w.Stop(ctx)
	e.loopMu.Lock()
	e.worker = nil
	e.loopMu.Unlock()
	return err
}

// running returns the started worker, or nil.
func (e *Engine) running() *worker.Worker {
	e.loopMu.Lock()
	defer e.loopMu.Unlock()
	return e.worker
}

// wakeLoop tells a running worker that work may be ready.
func (e *Engine) wakeLoop() {
	if w := e.running(); w != nil {
		w.Signal()
	}
}

// startRuns has a started worker start the runs' first steps here (see
// worker.StartRuns); tried is false when there is none.
func (e *Engine) startRuns(ctx context.Context, runs []store.NewRun) (tried, all bool, err error) {
	w := e.running()
	if w == nil {
		return false, false, nil
	}
	return w.StartRuns(ctx, runs)
}

// host is the engine as its worker sees it (worker.Host).
type host struct{ e *Engine }

func (h host) Signatures() []string { return h.e.servedSignatures() }
func (h host) Extra() map[string]int {
	h.e.mu.RLock()
	defer h.e.mu.RUnlock()
	return h.e.extra
}
func (h host) Claim(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	return h.e.claimTasks(ctx, p)
}
func (h host) CompleteAndContinue(ctx context.Context, results []store.TaskResult, limit int) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	return h.e.completeAndContinue(ctx, results, limit)
}
func (h host) Execute(ctx context.Context, ct *store.ClaimedTask) (store.TaskResult, bool) {
	return h.e.executeMeasured(ctx, ct)
}
func (h host) Goexited(ctx context.Context, ct *store.ClaimedTask) (store.TaskResult, bool) {
	return h.e.goexited(ctx, ct)
}
func (h host) Rows(ct *store.ClaimedTask, res *store.TaskResult) (rows, more int) {
	return h.e.rowsOf(ct, res)
}
func (h host) AskReturns(batch []store.TaskResult) { h.e.askReturns(batch) }
func (h host) Stored(batch []store.TaskResult, outs []store.CompletionOutcome) {
	h.e.afterComplete(batch, outs)
}
func (h host) Publish(ctx context.Context)       { h.e.serve(ctx) }
func (h host) CancelRuns(ids []dag.RunID)        { h.e.cancelRuns(ids) }
func (h host) FireSchedules(ctx context.Context) { h.e.fireSchedulesLogged(ctx) }

// rowsOf counts the tasks res may make ready or create, and its own (see
// finished), and how many more steps than one it surely makes ready: its
// step's children that have no other parent (see worker.Host).
func (e *Engine) rowsOf(ct *store.ClaimedTask, res *store.TaskResult) (rows, more int) {
	switch res.Outcome {
	case store.OutcomeMapped:
		return 1 + len(res.Elements), 0
	case store.OutcomeChild:
		if res.Child != nil {
			return 1 + len(res.Child.Tasks), 0
		}
	case store.OutcomeCompleted, store.OutcomeSkipped:
		if reg := e.lookup(ct.Workflow); reg != nil {
			step := stepOf(ct)
			if ct.Kind == store.KindElement {
				// One element of many: it seldom ends its mapped step.
				return 1 + reg.children[step], 0
			}
			return 1 + reg.children[step], reg.more[step]
		}
	}
	return 1, 0
}

// completeAndContinue stores results and has the store claim for this
// worker up to limit of the steps they made ready (store.Continuer), with
// their inputs filled in.
func (e *Engine) completeAndContinue(ctx context.Context, results []store.TaskResult, limit int) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	p := store.ClaimParams{Worker: e.cfg.WorkerID, Signatures: e.servedSignatures(), Limit: limit, Lease: e.cfg.Lease}
	var held map[dag.RunID][]byte
	p.Known, held = e.inputs.known()
	outs, next, err := e.store.CompleteAndContinue(ctx, results, p)
	if err != nil {
		return nil, nil, err
	}
	return outs, e.fillInputs(ctx, next, held), nil
}

// afterComplete wakes the waiters of runs that finished.
func (e *Engine) afterComplete(batch []store.TaskResult, outs []store.CompletionOutcome) {
	for i, o := range outs {
		if o.Outcome == store.OutcomeStale {
			e.log.Debug("dagen: stale result not applied", "run", batch[i].RunID, "step", batch[i].Step, "attempt", batch[i].Attempt)
			continue
		}
		if o.RunStatus.Terminal() {
			e.finished(batch[i].RunID, o.Finished)
		}
	}
}

// cancelRuns stops the steps running here of runs cancelled elsewhere,
// which a heartbeat learned of.
func (e *Engine) cancelRuns(ids []dag.RunID) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	for _, id := range ids {
		if sc := e.runs[id]; sc != nil {
			sc.cancel()
		}
	}
}

// Poll does one round of work in the calling goroutine: it fires due
// schedules and timers, rescues expired leases, claims a batch, executes it
// in order and completes it as a started engine's workers do: the unit
// that stores the results claims for this worker up to a batch of the
// steps they made ready (unless Config.DisableEagerContinue), and Poll
// executes and completes those in turn, until a completion hands none
// back. It returns how many timers and tasks it handled. Poll is how a
// manual engine is driven; it is safe on a started engine too.
func (e *Engine) Poll(ctx context.Context) (int, error) {
	// A manual engine is never started: it says here what Start would.
	if err := e.checkChildren(); err != nil {
		return 0, fmt.Errorf("poll: %w", err)
	}
	started, err := e.fireSchedules(ctx, e.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("poll: fire schedules: %w", err)
	}
	fired, err := e.store.FireTimers(ctx, e.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("poll: fire timers: %w", err)
	}
	fired += started
	rescued, err := e.store.RescueExpired(ctx, e.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("poll: rescue: %w", err)
	}
	var tasks []store.ClaimedTask
	// An empty signature list would claim every task: an engine that
	// knows none claims nothing.
	if sigs := e.servedSignatures(); len(sigs) > 0 {
		tasks, err = e.claimTasks(ctx, store.ClaimParams{
			Worker: e.cfg.WorkerID, Signatures: sigs, Limit: e.cfg.BatchSize, Lease: e.cfg.Lease,
		})
		if err != nil {
			return 0, fmt.Errorf("poll: claim: %w", err)
		}
	}
	handled := 0
	for len(tasks) > 0 {
		handled += len(tasks)
		results := make([]store.TaskResult, 0, len(tasks))
		workflows := make([]string, 0, len(tasks))
		for i := range tasks {
			if res, keep := e.executeMeasured(ctx, &tasks[i]); keep {
				results = append(results, res)
				workflows = append(workflows, tasks[i].Workflow)
			}
		}
		if len(results) == 0 {
			break
		}
		var outs []store.CompletionOutcome
		if e.cfg.DisableEagerContinue {
			outs, err = e.store.CompleteTasks(ctx, results)
			tasks = nil
		} else {
			// Up to a batch, as the next round would claim.
			outs, tasks, err = e.completeAndContinue(ctx, results, e.cfg.BatchSize)
		}
		if err != nil {
			return 0, fmt.Errorf("poll: complete: %w", err)
		}
		e.meters.Finished(workflows, outs)
		e.afterComplete(results, outs)
	}
	return fired + rescued + handled, nil
}
