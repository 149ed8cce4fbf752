package memstore

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
)

// lock and unlock guard the store; unlock also wakes subscribers when the
// critical section enqueued work.
func (s *Store) lock() { s.mu.Lock() }

func (s *Store) unlock() {
	if s.enqueued {
		s.enqueued = false
		for ch := range s.subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	s.mu.Unlock()
}

// Heartbeat implements store.Workers.
func (s *Store) Heartbeat(ctx context.Context, worker string, ttl time.Duration, held []store.HeldAttempt) ([]dag.RunID, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	now := s.now()
	s.workers[worker] = now.Add(ttl)
	s.beats[worker] = now
	var cancelled []dag.RunID
	runs := make(map[dag.RunID]bool, len(held))
	claims := make(map[int64]bool, len(held))
	for _, a := range held {
		claims[a.Claim] = true
		if runs[a.RunID] {
			continue
		}
		runs[a.RunID] = true
		if r := s.runs[a.RunID]; r == nil || r.Status == store.RunCancelled || r.timedOut {
			cancelled = append(cancelled, a.RunID)
		}
	}
	// Attempts claimed for worker long ago that it does not hold. The
	// lease heap holds every running attempt (and stale entries, which
	// the checks skip).
	var lost []leaseEntry
	for _, le := range s.leases {
		t := le.run.tasks[le.task]
		if !claims[le.claim] && transition.Holds(&t.Task, le.Attempt, le.claim) &&
			t.worker == worker && t.claimedAt.Before(now.Add(-ttl)) {
			lost = append(lost, le)
		}
	}
	b := s.newBatch(now, 0)
	for _, le := range lost {
		if t := le.run.tasks[le.task]; transition.Holds(&t.Task, le.Attempt, le.claim) {
			b.release(t, store.NotHeldDetail)
		}
	}
	b.settle()
	return cancelled, nil
}

// RetireWorker implements store.Workers.
func (s *Store) RetireWorker(ctx context.Context, worker string, release bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.lock()
	defer s.unlock()
	delete(s.workers, worker)
	delete(s.beats, worker)
	delete(s.serves, worker)
	if !release {
		return 0, nil
	}
	b := s.newBatch(s.now(), 0)
	n := 0
	for _, r := range s.runs {
		for _, t := range r.tasks {
			if t.Status == store.TaskRunning && t.worker == worker {
				b.release(t, store.ReleasedDetail)
				n++
			}
		}
	}
	b.settle()
	return n, nil
}

// release hands a RUNNING task back from a stopping worker (or one that
// never received it), in the batch: enqueued again whatever attempts it
// has left, its attempt not counted, with a RESCUED event of that detail;
// in a run that is no longer RUNNING it is cancelled. One call releases
// all its tasks in one batch, as pgstore's does, so their events come in
// the core's order.
func (b *batch) release(t *task, detail string) {
	if b.tr.Release(&t.Task, detail, -1) {
		t.released++
	}
}

// PruneRuns implements store.Workers.
func (s *Store) PruneRuns(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.lock()
	defer s.unlock()
	n := 0
	for id, r := range s.runs {
		if n >= limit {
			break
		}
		if r.Status.Terminal() && r.rec.FinishedAt.Before(cutoff) && !r.busy() {
			delete(s.runs, id)
			if r.rec.Key != "" {
				delete(s.keys, keyOf(&r.rec, r.rec.Key))
			}
			s.dropSlot(r)
			n++
		}
	}
	return n, nil
}

// busy reports whether a finished run still has a task that may change: a
// running step of a failed run, or its onfailure task.
func (r *run) busy() bool {
	for i := range r.tasks {
		switch r.tasks[i].Status {
		case store.TaskQueued, store.TaskRunning, store.TaskBackoff:
			return true
		}
	}
	return false
}

// Subscribe implements store.Notifier: the channel receives a value after
// every change that enqueued work.
func (s *Store) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	s.lock()
	s.subs[ch] = struct{}{}
	s.unlock()
	go func() {
		<-ctx.Done()
		s.lock()
		delete(s.subs, ch)
		s.unlock()
	}()
	return ch, nil
}

// SubscribeCancels implements store.CancelNotifier: the channel receives
// the id of every run CancelRun cancels, unless it is full.
func (s *Store) SubscribeCancels(ctx context.Context) (<-chan dag.RunID, error) {
	ch := make(chan dag.RunID, 64)
	s.lock()
	s.cancels[ch] = struct{}{}
	s.unlock()
	go func() {
		<-ctx.Done()
		s.lock()
		delete(s.cancels, ch)
		s.unlock()
	}()
	return ch, nil
}
