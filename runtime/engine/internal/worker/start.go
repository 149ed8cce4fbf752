package worker

import (
	"context"
	"errors"
	"time"

	"github.com/dagenhq/dagen/runtime/engine/internal/tracing"
	"github.com/dagenhq/dagen/runtime/store"
)

// StartRuns creates runs through the store's StartRuns (store.Starter)
// when the worker has free slots, and hands the root steps the store
// claimed for this worker to the executors: they skip the ready queue, so
// they wait for no poll and need no claim of their own. The store starts
// only the roots the fair queue would hand out next, one a tenant, so a
// run started here gets no head start over other tenants' work. It reports
// whether it tried to create the runs, and whether it started all their
// roots; when it did not try (eager start disabled, the worker stopping,
// no free slot), the caller creates them.
func (w *Worker) StartRuns(ctx context.Context, runs []store.NewRun) (tried, all bool, err error) {
	if w.cfg.DisableEagerStart || !w.beginStart() {
		return false, false, nil
	}
	defer w.starts.Done()
	// The store starts at most one root a tenant.
	roots := 0
	tenants := make(map[string]bool, 1)
	for _, r := range runs {
		tenants[r.Tenant] = true
		for _, t := range r.Tasks {
			if len(t.Parents) == 0 && t.Kind != store.KindOnFailure {
				roots++
			}
		}
	}
	n := w.slots.Take(w.slots.StartCapacity(tenants), func(free, _ int) int { return min(free, len(tenants)) })
	if n == 0 {
		return false, false, nil
	}
	p := store.ClaimParams{Worker: w.cfg.WorkerID, Signatures: w.host.Signatures(), Limit: n, Lease: w.cfg.Lease}
	tasks, err := w.cfg.Store.StartRuns(ctx, runs, p)
	if err != nil && !errors.Is(err, store.ErrRunExists) && !errors.Is(err, store.ErrInvalidRun) {
		// Not an answer from the store: it may have committed.
		tasks = w.recoverStarted(ctx, runs, n)
	}
	w.slots.Unused(n - len(tasks))
	w.dispatch(tasks, nil)
	return true, err == nil && len(tasks) == roots, err
}

// recoverStarted returns the root steps a failed StartRuns claimed for this
// worker all the same: its transaction committed, but its answer was lost
// (the caller's context ended, or the connection broke). Left alone, those
// steps would stay RUNNING as long as this worker heartbeats. It returns
// at most limit of them; none when the runs were not created or cannot be
// read now.
func (w *Worker) recoverStarted(ctx context.Context, runs []store.NewRun, limit int) []store.ClaimedTask {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var tasks []store.ClaimedTask
	for _, nr := range runs {
		run, err := w.cfg.Store.GetRun(rctx, nr.ID)
		if errors.Is(err, store.ErrRunNotFound) {
			continue // not created: the whole start failed
		}
		var stored []store.Task
		if err == nil {
			stored, err = w.cfg.Store.ListTasks(rctx, nr.ID)
		}
		if err != nil {
			w.cfg.Log.Error("dagen: cannot tell whether a failed start claimed steps here; they wait for this worker to stop",
				tracing.RunLogArgs(nr.ID, nr.Workflow, nr.Tenant, nr.TraceParent, "worker", w.cfg.WorkerID, "err", err)...)
			continue
		}
		for _, t := range stored {
			if len(tasks) < limit && len(t.Parents) == 0 && t.Kind != store.KindOnFailure &&
				t.Status == store.TaskRunning && t.Attempt == 1 && t.Worker == w.cfg.WorkerID {
				tasks = append(tasks, store.ClaimedTask{
					RunID: run.ID, Workflow: run.Workflow, Tenant: run.Tenant,
					Step: t.Name, Kind: t.Kind, Attempt: 1, Claim: t.Claim, Signature: t.Signature, Input: run.Input,
					TraceParent: nr.TraceParent,
				})
			}
		}
	}
	return tasks
}

// beginStart registers a trigger that may hand steps to the executors. It
// reports false once Stop has begun: work is about to close.
func (w *Worker) beginStart() bool {
	w.startMu.Lock()
	defer w.startMu.Unlock()
	if w.stopped {
		return false
	}
	w.starts.Add(1)
	return true
}
