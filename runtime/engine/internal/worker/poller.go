package worker

import (
	"time"

	"github.com/dagenhq/dagen/runtime/engine/internal/outage"
	"github.com/dagenhq/dagen/runtime/store"
)

// noteTimer records a wake time the poller should not sleep past.
func (w *Worker) noteTimer(at time.Time) {
	w.timerMu.Lock()
	earlier := w.nextTimer.IsZero() || at.Before(w.nextTimer)
	if earlier {
		w.nextTimer = at
	}
	w.timerMu.Unlock()
	if earlier {
		w.Signal()
	}
}

// NoteTimer tells the worker of a timer due at at that the store set for
// another reason than this worker's own results (an operator's
// cancellation cancelling child runs): it fires it then.
func (w *Worker) NoteTimer(at time.Time) { w.noteTimer(at) }

func (w *Worker) timerDue(now time.Time) (due bool, next time.Time) {
	w.timerMu.Lock()
	defer w.timerMu.Unlock()
	return !w.nextTimer.IsZero() && !now.Before(w.nextTimer), w.nextTimer
}

// idleTimerRounds is how many idle polls a worker makes per look for
// timers it was not told of (written by another process): its own timers
// it fires when due.
const idleTimerRounds = 10

func (w *Worker) poller() {
	var lastTimers time.Time
	retry := outage.Backoff{Min: w.cfg.PollInterval, Max: outage.MaxBackoff}
	// While polls find nothing, the wait between them doubles up to
	// IdlePollInterval: an idle fleet costs the database a few queries a
	// second, not a claim every PollInterval per worker. A notification,
	// a trigger or a freed slot wakes the worker at once either way.
	idle := w.cfg.PollInterval
	for {
		select {
		case <-w.stopPoll:
			return
		default:
		}
		// Claim first, then fire timers: a wake-up is most often for a task
		// just enqueued, which should not wait for the timer queries.
		claimed, full, err := w.claim()
		if err != nil {
			w.cfg.Health.Failed("claim tasks", err)
			sleepFor(w.ctx, retry.Next(), w.stopPoll)
			continue
		}
		now := time.Now()
		// A timer due on this host's clock that the store does not fire is
		// not due on the store's clock (the clocks differ): waiting for it
		// by this clock would poll without a pause until the store's clock
		// catches up.
		notFired := false
		timerEvery := w.cfg.PollInterval
		if idle > w.cfg.PollInterval {
			timerEvery = idleTimerRounds * idle
		}
		if due, _ := w.timerDue(now); due || now.Sub(lastTimers) >= timerEvery {
			lastTimers = now
			fired, err := w.fireTimers()
			if err != nil {
				// Every error path waits: a timer that stays due must not
				// turn a store that fails into a busy loop.
				w.cfg.Health.Failed("fire timers", err)
				sleepFor(w.ctx, retry.Next(), w.stopPoll)
				continue
			}
			retry.Reset()
			if fired > 0 {
				continue // claim the tasks they enqueued
			}
			notFired = due
		}
		if full {
			// A full batch: there may be more, for a second claim too.
			select {
			case w.alongside <- struct{}{}:
			default:
			}
			continue
		}
		if claimed > 0 {
			idle = w.cfg.PollInterval
		}
		wait := idle
		idle = min(2*idle, max(w.cfg.IdlePollInterval, w.cfg.PollInterval))
		if _, next := w.timerDue(now); !next.IsZero() && !notFired {
			wait = max(min(wait, time.Until(next)), 0)
		}
		t := time.NewTimer(wait)
		select {
		case <-w.stopPoll:
			t.Stop()
			return
		case <-w.wake:
			idle = w.cfg.PollInterval
		case <-w.notify:
			idle = w.cfg.PollInterval
			// It may be for a task parked for a rate limit's tokens: its
			// bucket is due at once among the timers.
			lastTimers = time.Time{}
		case <-t.C:
		}
		t.Stop()
	}
}

// claim claims as many tasks as the worker may hold more of, and hands them
// to the executors. A task is held from its claim until its result is
// stored, so results waiting for the store count: were they left out, a
// result would queue behind as many others as the executors can produce
// while one completion is written, and a light tenant's result would wait
// longer for its transaction (see docs/performance.md, "Results waiting
// for the store count as held"). A fan-out's first step takes, beside its
// own slot, slots for the children its completion will start here
// (reserve), so that a claim takes no more roots than their children
// have room for. It reports whether the batch was full, so more may be
// ready, and how many tasks it claimed.
func (w *Worker) claim() (claimed int, full bool, err error) {
	// An empty signature list would claim every task: a worker that
	// knows none claims nothing.
	sigs := w.host.Signatures()
	if len(sigs) == 0 {
		return 0, false, nil
	}
	limit := w.slots.Take(w.slots.ClaimCapacity(), func(free, held int) int {
		// Under load, wait for a worthwhile batch rather than claiming a
		// few at a time.
		if n := min(free, w.cfg.BatchSize); held == 0 || n >= max(1, w.cfg.BatchSize/4) {
			return n
		}
		return 0
	})
	if limit <= 0 {
		return 0, false, nil
	}
	began := time.Now()
	p := store.ClaimParams{Worker: w.cfg.WorkerID, Signatures: sigs, Limit: limit, Lease: w.cfg.Lease, Extra: w.host.Extra()}
	tasks, err := w.host.Claim(w.ctx, p)
	if err == nil {
		w.cfg.Meters.Claimed(len(tasks), time.Since(began))
	}
	reserved := reserve(tasks, p.Extra, limit)
	kept := len(tasks)
	for _, r := range reserved {
		kept += r
	}
	w.slots.Unused(limit - kept)
	if err != nil {
		return 0, false, err
	}
	w.cfg.Health.Succeeded()
	w.dispatch(tasks, reserved)
	return len(tasks), p.Filled(tasks), nil
}

// reserve keeps, of the limit slots a claim took, those its tasks will
// want for the steps their completions start here (extra, by signature:
// a fan-out's children), in claim order, as many as the claim left: by
// task, the slots kept for it (nil when none).
func reserve(tasks []store.ClaimedTask, extra map[string]int, limit int) []int {
	if len(extra) == 0 {
		return nil
	}
	var reserved []int
	left := limit - len(tasks)
	for i := range tasks {
		if r := min(extra[tasks[i].Signature], left); r > 0 {
			if reserved == nil {
				reserved = make([]int, len(tasks))
			}
			reserved[i], left = r, left-r
		}
	}
	return reserved
}

// fireTimers fires due timers, learns when the next one is due, and
// returns how many it fired. On an error, the timers fired before it count
// as fired only when some were.
func (w *Worker) fireTimers() (int, error) {
	fired := 0
	for {
		n, err := w.cfg.Store.FireTimers(w.ctx, w.cfg.BatchSize)
		if err != nil {
			if fired > 0 {
				return fired, nil // claim what they enqueued; the next round fails again if the store does
			}
			return 0, err
		}
		fired += n
		if n < w.cfg.BatchSize {
			break
		}
	}
	at, ok, err := w.cfg.Store.NextTimer(w.ctx)
	if err != nil {
		if fired > 0 {
			return fired, nil
		}
		return 0, err
	}
	w.cfg.Health.Succeeded()
	w.timerMu.Lock()
	w.nextTimer = time.Time{}
	if ok {
		w.nextTimer = at
	}
	w.timerMu.Unlock()
	return fired, nil
}
