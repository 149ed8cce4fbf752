package memstore

import (
	"container/heap"
	"context"
	"fmt"
	"slices"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
)

// Child runs (store.KindChild), as pgstore keeps them: a child run
// records the task attempt that started it (run.parent); its end sets a
// timer of kind child on that task, due at once, and a run that fails,
// times out or is cancelled sets a timer of kind cancel on each of its
// children still under way. Firing them is a unit of its own, as in
// pgstore, where no transaction locks a child and then its parent.

// cancelTask is the task index of a run's cancel timer.
const cancelTask = -2

// createChildren creates the child runs the batch's results started,
// under the store's lock: a child whose key is taken (the attempt's child
// exists) is not created, and its task waits for the run that has it.
func (b *batch) createChildren() {
	s, now := b.s, b.now
	for _, c := range b.tr.Children {
		pr, pt := b.task(c.Task)
		if pr.Status != store.RunRunning || pt.Status != store.TaskAwaiting {
			continue
		}
		nr := *c.Run
		sh, err := buildShape(&nr)
		if err == nil {
			err = store.ValidTenant(nr.Tenant)
		}
		if err != nil {
			// The engine built the run from a registered definition: a
			// run it cannot create fails the task for good.
			b.tr.Fail(&pt.Task, fmt.Sprintf("start child run of %s: %v", nr.Workflow, err), c.Src)
			continue
		}
		runs := []store.NewRun{nr}
		if _, err := s.createLocked(runs, []*shape{sh}, store.ClaimParams{}, now); err != nil {
			b.tr.Fail(&pt.Task, fmt.Sprintf("start child run of %s: %v", nr.Workflow, err), c.Src)
			continue
		}
		id := nr.ID
		if !runs[0].Existing.IsZero() {
			id = runs[0].Existing
		} else {
			cr := s.runs[id]
			link := *nr.Parent
			cr.parent = &link
			s.children[pr.rec.ID] = append(s.children[pr.rec.ID], id)
			b.credited(c.Src)
		}
		pt.child = id
	}
}

// childEnds sets the timers that a run's end sets: on its parent's task,
// and on its children still under way when it did not complete.
func (b *batch) childEnds(tr *transition.Run) {
	s, r := b.s, b.s.runs[tr.ID]
	if p := r.parent; p != nil {
		if pr := s.runs[p.Run]; pr != nil {
			if ti, ok := pr.indexOf(p.Task); ok {
				heap.Push(&s.timers, timerEntry{wake: b.now, run: pr, task: ti, Attempt: p.Attempt, claim: p.Claim, kind: transition.TimerChild})
				b.due = true
			}
		}
	}
	if tr.End == transition.EndCompleted {
		return
	}
	for _, id := range s.children[r.rec.ID] {
		if c := s.runs[id]; c != nil && !c.Status.Terminal() {
			heap.Push(&s.timers, timerEntry{wake: b.now, run: c, task: cancelTask, kind: transition.TimerCancel})
			b.due = true
		}
	}
}

// fireChild resolves the task of a child timer with its child's outcome.
func (b *batch) fireChild(e timerEntry) bool {
	t := e.run.tasks[e.task]
	c := b.s.runs[t.child]
	if c == nil || c.parent == nil {
		return false
	}
	out := transition.ChildOutcome{ID: c.rec.ID, Workflow: c.rec.Workflow, Status: c.Status, Failure: c.Failure, Result: c.parent.Result}
	if ti, ok := c.indexOf(c.parent.Result); ok && c.parent.Result != "" {
		out.ResultStatus, out.Output = c.tasks[ti].Status, c.tasks[ti].Output
	}
	return b.tr.ChildEnded(&t.Task, e.Attempt, e.claim, out, -1)
}

// ListChildren implements store.Operator.
func (s *Store) ListChildren(ctx context.Context, id dag.RunID) ([]store.ChildRun, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	if s.runs[id] == nil {
		return nil, fmt.Errorf("list children of run %s: %w", id, store.ErrRunNotFound)
	}
	out := []store.ChildRun{}
	for _, cid := range s.children[id] {
		c := s.runs[cid]
		if c == nil {
			continue
		}
		out = append(out, store.ChildRun{
			ID: cid, Workflow: c.rec.Workflow, Status: c.Status, Task: c.parent.Task, Attempt: c.parent.Attempt,
			CreatedAt: c.rec.CreatedAt, FinishedAt: c.rec.FinishedAt,
		})
	}
	slices.SortFunc(out, func(a, b store.ChildRun) int { return compareIDs(a.ID, b.ID) })
	return out, nil
}

// isChild reports whether r matches f's Children.
func isChild(r *run, f store.ChildFilter) bool {
	switch f {
	case store.OnlyChild:
		return r.parent != nil
	case store.NoChildren:
		return r.parent == nil
	}
	return true
}
