package memstore

import (
	"container/heap"
	"context"
	"fmt"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

var _ store.Signaler = (*Store)(nil)

// await applies an OutcomeAwait: the held signal completes the wait at
// once; otherwise it waits, with a timer when the wait ends. It returns
// how many tasks it enqueued.
func (s *Store) await(r *run, ti int, res *store.TaskResult, now time.Time) int {
	t := &r.tasks[ti]
	if t.held {
		t.output, t.held, t.signal = t.signal, false, nil
		r.event(now, ti, store.EventCompleted, t.attempt, "")
		return s.resolve(r, ti, store.TaskCompleted, now)
	}
	t.status = store.TaskAwaiting
	t.reason = res.Reason
	t.wakeAt = time.Time{}
	detail := ""
	if wake, ends := res.WakeTime(now); ends {
		t.wakeAt = wake
		detail = t.wakeAt.UTC().Format(time.RFC3339Nano)
		heap.Push(&s.timers, timerEntry{wake: t.wakeAt, run: r, task: ti, attempt: t.attempt})
	}
	r.event(now, ti, store.EventAwaiting, t.attempt, detail)
	return 0
}

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
	t := &r.tasks[ti]
	switch {
	case t.status.Terminal():
		return false, fmt.Errorf("step %q is %s: %w", step, t.status, store.ErrSignalResolved)
	case t.held:
		return false, fmt.Errorf("step %q: %w", step, store.ErrSignalHeld)
	case r.rec.Status.Terminal():
		return false, fmt.Errorf("run %s is %s: %w", id, r.rec.Status, store.ErrRunFinished)
	}
	now := s.now()
	if t.status != store.TaskAwaiting {
		t.held, t.signal = true, payload
		r.event(now, ti, store.EventSignalled, t.attempt, store.SignalHeld)
		return false, nil
	}
	t.output, t.reason, t.wakeAt = payload, "", time.Time{}
	r.event(now, ti, store.EventSignalled, t.attempt, store.SignalDelivered)
	r.event(now, ti, store.EventCompleted, t.attempt, "")
	s.resolve(r, ti, store.TaskCompleted, now)
	return true, nil
}
