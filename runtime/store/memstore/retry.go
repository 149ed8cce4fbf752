package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/retryplan"
)

// RetryRun implements store.Retrier. Queue entries, timers and leases of
// the reset tasks die with their status (they are dropped lazily); the
// attempts before the retry are added to the task's released attempts, so
// they do not count against its MaxAttempts.
func (s *Store) RetryRun(ctx context.Context, id dag.RunID, rt store.Retry) (store.RetryResult, error) {
	if err := ctx.Err(); err != nil {
		return store.RetryResult{}, err
	}
	s.lock()
	defer s.unlock()
	r := s.runs[id]
	if r == nil {
		return store.RetryResult{}, fmt.Errorf("retry run %s: %w", id, store.ErrRunNotFound)
	}
	// Elements are not planned: a mapped task that is reset maps anew,
	// and its elements with it.
	tasks := make([]retryplan.Task, len(r.shape.tasks))
	for i := range r.shape.tasks {
		nt := &r.shape.tasks[i]
		children := make([]string, len(r.shape.children[i]))
		for j, c := range r.shape.children[i] {
			children[j] = r.shape.tasks[c].Name
		}
		tasks[i] = retryplan.Task{Name: nt.Name, Kind: nt.Kind, Children: children, Status: r.tasks[i].Status}
	}
	p, err := retryplan.Make(r.Status, tasks, rt)
	if err != nil {
		return store.RetryResult{}, fmt.Errorf("retry run %s: %w", id, err)
	}
	now := s.now()
	detail := rt.Detail()
	for i := range r.shape.tasks {
		if !p.Reset[i] {
			continue
		}
		r.resetElements(i, detail, now)
		t := r.tasks[i]
		r.event(now, i, store.EventRetried, t.Attempt, detail)
		fresh := r.newTask(i, store.TaskPending)
		fresh.Attempt = t.Attempt // never goes back: old attempts are stale
		fresh.pendingParents = p.PendingParents[i]
		fresh.released = t.Attempt // the budget starts over
		fresh.worker = t.worker
		*t = fresh
	}
	r.Status = store.RunRunning
	r.Failure = nil
	r.rec.FinishedAt = time.Time{}
	r.Pending = p.Pending
	r.timedOut = false
	s.arm(r, now) // the deadline counts from the retry
	if r.slot != nil {
		s.capRun(r, 0, now) // queues its ready tasks if admitted
		return p.Result, nil
	}
	for i := range r.shape.tasks {
		if p.Enqueue[i] {
			s.enqueue(r, i, now)
		}
	}
	return p.Result, nil
}
