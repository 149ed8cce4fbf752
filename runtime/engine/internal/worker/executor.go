package worker

import (
	"time"

	"github.com/dagenhq/dagen/runtime/engine/internal/tracing"
	"github.com/dagenhq/dagen/runtime/store"
)

// dispatch hands claimed tasks to the executors, starting as many more as
// there are tasks no executor is free for. Executors are not kept idle: an
// executor that finds no task waiting ends. A pool of Concurrency idle
// goroutines costs CPU for nothing: the garbage collector scans their
// stacks and shrinks them, and each step grows its executor's stack back
// (see docs/performance.md, "Executors are not kept idle").
//
// reserved, when set, are by task the slots a claim kept for the steps
// its completion will start (see reserve).
func (w *Worker) dispatch(tasks []store.ClaimedTask, reserved []int) {
	w.slots.Hold(tasks)
	var at time.Time
	if w.cfg.Meters != nil {
		at = time.Now()
	}
	for i := range tasks {
		h := held{ct: &tasks[i], at: at}
		if reserved != nil {
			h.reserved = reserved[i]
		}
		w.work <- h // never blocks: work holds Concurrency
	}
	// Read after the sends: an executor that ends looks at work once more
	// after it stopped counting itself, so every task is picked up.
	for started := 0; started < len(tasks); {
		running := w.executors.Load()
		if running >= int64(w.cfg.Concurrency) {
			return // the running executors take the rest
		}
		if w.executors.CompareAndSwap(running, running+1) {
			started++
			w.execWG.Add(1)
			go w.executor()
		}
	}
}

// executor runs tasks from work until none is waiting.
func (w *Worker) executor() {
	defer w.execWG.Done()
	for {
		var h held
		var ok bool
		select {
		case h, ok = <-w.work:
		default:
			w.executors.Add(-1)
			select {
			case h, ok = <-w.work: // sent as we were ending: dispatch may not have started anyone for it
				w.executors.Add(1)
			default:
				return
			}
		}
		if !ok {
			w.executors.Add(-1)
			return
		}
		if w.cfg.Meters != nil {
			// In the store's ready queue (its clock), then here.
			w.cfg.Meters.QueueWait(h.ct.Workflow, h.ct.Queued+time.Since(h.at))
		}
		w.run(h.ct, h.reserved)
	}
}

// held is a task handed to the executors, and when.
type held struct {
	ct       *store.ClaimedTask
	at       time.Time // zero without metrics
	reserved int       // slots kept for the steps its completion starts: see reserve
}

// run executes a claimed task and hands its result to a completer. A step
// that calls runtime.Goexit (t.FailNow in a helper, a log.Fatal-like
// wrapper that exits the goroutine) ends this goroutine, recover or not:
// run's deferred call then hands on a failed attempt, as for a panic, and
// starts an executor in this one's place, so neither the task nor the slot
// is lost.
func (w *Worker) run(ct *store.ClaimedTask, reserved int) {
	returned := false
	defer func() {
		if returned {
			return
		}
		res, keep := w.host.Goexited(w.ctx, ct)
		w.handOn(finished{res: res, rows: 1, reserved: reserved, tenant: ct.Tenant, queued: ct.TenantQueued, workflow: ct.Workflow, trace: ct.TraceParent}, keep)
		w.execWG.Add(1)
		go w.executor() // counted in w.executors already: this one's place
	}()
	res, keep := w.host.Execute(w.ctx, ct)
	returned = true
	rows, more := w.host.Rows(ct, &res)
	w.handOn(finished{res: res, rows: rows, more: more, reserved: reserved, tenant: ct.Tenant, queued: ct.TenantQueued, workflow: ct.Workflow, trace: ct.TraceParent}, keep)
}

// handOn passes a finished attempt's result to its completer, or, when
// Stop cut the attempt short (keep is false), drops it: RetireWorker
// releases the task.
func (w *Worker) handOn(f finished, keep bool) {
	res := f.res
	w.slots.Finished(store.HeldBy(&res), f.tenant, keep)
	if !keep {
		w.slots.Unused(f.reserved)
		ct := store.ClaimedTask{RunID: res.RunID, Workflow: f.workflow, Step: res.Step, Tenant: f.tenant, TraceParent: f.trace}
		w.cfg.Log.Info("dagen: step cut short by Stop; its task goes to another worker",
			tracing.LogArgs(&ct, "worker", w.cfg.WorkerID, "attempt", res.Attempt)...)
		return
	}
	w.Signal()
	w.laneOf(f) <- f
}
