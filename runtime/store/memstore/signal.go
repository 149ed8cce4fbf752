package memstore

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// SendSignal implements store.Signaler.
func (s *Store) SendSignal(ctx context.Context, id dag.RunID, step string, payload []byte) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.lock()
	defer s.unlock()
	r := s.runs[id]
	if r == nil {
		return false, fmt.Errorf("run %s: %w", id, store.ErrRunNotFound)
	}
	ti, ok := r.shape.index[step]
	if !ok || r.spec(ti).Kind != store.KindSignal {
		return false, fmt.Errorf("step %q: %w", step, store.ErrNotSignal)
	}
	t := r.tasks[ti]
	switch {
	case t.Status.Terminal():
		return false, fmt.Errorf("step %q is %s: %w", step, t.Status, store.ErrSignalResolved)
	case t.Held:
		return false, fmt.Errorf("step %q: %w", step, store.ErrSignalHeld)
	case r.Status.Terminal():
		return false, fmt.Errorf("run %s is %s: %w", id, r.Status, store.ErrRunFinished)
	}
	b := s.newBatch(s.now(), 1)
	if t.Status != store.TaskAwaiting {
		t.signal = payload
	}
	delivered := b.tr.Signal(&t.Task, payload)
	b.settle()
	return delivered, nil
}
