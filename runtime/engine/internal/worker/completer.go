package worker

import (
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine/internal/outage"
	"github.com/dagenhq/dagen/runtime/store"
)

// numCompleters is how many batches of results may be on their way to the
// store at once: two keep a store busy while the next batch fills. Each
// completer takes the results of its own share of the runs, so two
// batches never wait for each other's run locks.
const numCompleters = 2

// MaxBatchRows bounds the tasks one batch of results may make ready or
// create, as the engine counts them (see finished): a batch stops growing
// once it reaches this many, short of BatchSize. Results of a fan-out's
// first step, 512 of which made 25,600 children ready in one transaction,
// then go in batches of some eighty: the memory a completion holds stays
// within a few megabytes, and no transaction locks its runs for long.
// One result that creates more (a mapped step of 100,000 elements) still
// goes alone.
const MaxBatchRows = 4096

// finished is an attempt's result on its way to a completer, with rows:
// one for the task and one for each task it may make ready or create (its
// step's children, or its elements).
type finished struct {
	res      store.TaskResult
	rows     int
	more     int    // the steps it surely makes ready beyond the one its slot takes: see completeBatch
	reserved int    // the slots its claim kept for those steps (see reserve), counted as executing
	tenant   string // the run's: see laneOf
	queued   bool   // the claim's store.ClaimedTask.TenantQueued: see laneOf
	workflow string // the run's, for metrics
	trace    string // the run's trace context, for the log
}

// completerOf is the completer that stores the results of run id.
func completerOf(id dag.RunID) int { return int(id[len(id)-1]) % numCompleters }

func (w *Worker) completer(results <-chan finished) {
	batch := make([]store.TaskResult, 0, w.cfg.BatchSize)
	tenants := make([]string, 0, w.cfg.BatchSize)
	workflows := make([]string, 0, w.cfg.BatchSize)
	for f := range results {
		batch, tenants, workflows = append(batch[:0], f.res), append(tenants[:0], f.tenant), append(workflows[:0], f.workflow)
		rows, more, reserved := f.rows, f.more, f.reserved
	fill:
		for len(batch) < w.cfg.BatchSize && rows < MaxBatchRows {
			select {
			case f, ok := <-results:
				if !ok {
					break fill
				}
				batch, tenants, workflows = append(batch, f.res), append(tenants, f.tenant), append(workflows, f.workflow)
				rows, more, reserved = rows+f.rows, more+f.more, reserved+f.reserved
			default:
				break fill
			}
		}
		w.completeBatch(batch, tenants, workflows, more, reserved)
	}
}

// completeBatch stores a batch of results, retrying while the store is
// unreachable, and gives their slots back: to the steps the store claimed
// for them (see continueWith), the rest to the poller. The store may claim
// as many steps as the results free slots, and, when they surely make
// more ready (more: a fan-out's first step), as many of those as their
// claims kept slots for (reserved: see reserve) and as there are free
// slots for the rest, which it takes first (slots.Slots.TakeFree): a
// fan-out's children then start here at once, as a chain's next step
// does, rather than wait in the queue for the next claim. Results that
// cannot be stored before Stop gives up on them (its deadline passed) are
// left to lease expiry: another worker re-runs those attempts.
func (w *Worker) completeBatch(batch []store.TaskResult, tenants, workflows []string, more, reserved int) {
	cont := w.continueWith()
	taken := reserved
	if cont {
		defer w.starts.Done()
		taken += w.slots.TakeFree(more - reserved)
	}
	w.host.AskReturns(batch)
	var next []store.ClaimedTask
	var outs []store.CompletionOutcome // nil unless the results were stored
	retry := outage.Backoff{Min: 10 * time.Millisecond, Max: outage.MaxBackoff}
	for {
		var err error
		began := time.Now()
		if cont {
			outs, next, err = w.host.CompleteAndContinue(w.abandon, batch, len(batch)+taken)
		} else {
			outs, err = w.cfg.Store.CompleteTasks(w.abandon, batch)
		}
		if err == nil {
			w.cfg.Meters.Completed(len(batch), time.Since(began))
			w.cfg.Meters.Finished(workflows, outs)
			w.cfg.Health.Succeeded()
			for _, o := range outs {
				if o.TimerDue {
					// A child run's end, or a parent's: its timer is due
					// now, and this worker fires it.
					w.noteTimer(time.Now())
					break
				}
			}
			for _, r := range batch {
				if r.Outcome == store.OutcomeRetry || r.Outcome == store.OutcomeSleep {
					at := r.WakeAt
					if at.IsZero() {
						at = time.Now().Add(r.Delay)
					}
					w.noteTimer(at)
				}
			}
			break
		}
		outs = nil
		if w.abandon.Err() != nil {
			break // Stop gave up on them: it logged how many
		}
		w.cfg.Health.Failed("complete tasks", err)
		t := time.NewTimer(retry.Next())
		select {
		case <-w.abandon.Done():
			t.Stop()
		case <-t.C:
		}
		if w.abandon.Err() != nil {
			break
		}
	}
	for i := range batch {
		w.slots.Unhold(store.HeldBy(&batch[i]), tenants[i])
	}
	// The claimed steps take their slots before the results give theirs
	// back, so the poller never sees more free than there are.
	w.slots.Stored(len(batch), taken, len(next))
	w.dispatch(next, nil)
	w.Signal()
	// Waiters are woken last: their runs' tasks are unheld (a Wait that
	// finds a task of its run held here after it registered is woken: see
	// Wait), and the slots are free for the next trigger a woken caller
	// makes (a light tenant's run one at a time finds its kept slot).
	w.host.Stored(batch, outs)
}

// continueWith reports whether to store results so that the store claims
// the steps they make ready (store.Continuer), registered like a trigger
// that starts runs here (see beginStart): not when the engine is told not
// to, or Stop has begun.
func (w *Worker) continueWith() bool {
	return !w.cfg.DisableEagerContinue && w.beginStart()
}
