package memstore

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// RollBack makes the RUNNING task step of run look as it did before its
// last claim, as a standby promoted before it saw that claim would show
// it: QUEUED again, in the ready queue, at the attempt before, its claim
// forgotten. The conformance suite's rollback cases use it
// (storetest.RollBacker); the worker that made the claim still holds it.
func (s *Store) RollBack(ctx context.Context, run dag.RunID, step string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.lock()
	defer s.unlock()
	r := s.runs[run]
	if r == nil {
		return fmt.Errorf("roll back %s/%s: %w", run, step, store.ErrRunNotFound)
	}
	ti, ok := r.indexOf(step)
	if !ok {
		return fmt.Errorf("roll back %s/%s: no such task", run, step)
	}
	t := r.tasks[ti]
	if t.Status != store.TaskRunning {
		return fmt.Errorf("roll back %s/%s: task is %s, not RUNNING", run, step, t.Status)
	}
	t.Attempt--
	t.Claim = 0
	t.worker = ""
	s.enqueue(r, ti, s.now())
	s.enqueued = true
	return nil
}
