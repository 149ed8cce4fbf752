package memstore

import (
	"container/heap"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
)

// batch is one unit of work under the store's lock: the transition core
// decides it (tr), and settle applies the decision to the maps, in the
// order pgstore writes it, so that both stores log the same events in the
// same order.
type batch struct {
	s      *Store
	now    time.Time
	tr     *transition.Batch
	credit []int // tasks queued, per source index
	// queued are the runs the batch ended while they were QUEUED under
	// their cap (a deadline, a cancellation): they leave its queue.
	queued map[*run]bool
	// due: the batch set a timer due at once (children.go).
	due bool
}

// newBatch starts a batch at now with sources sources (results, timers,
// leases) to credit.
func (s *Store) newBatch(now time.Time, sources int) *batch {
	b := &batch{s: s, now: now, credit: make([]int, sources)}
	b.tr = transition.New(now, func(tr *transition.Run, name string) *transition.Task {
		r := s.runs[tr.ID]
		if r == nil {
			return nil
		}
		if ti, ok := r.indexOf(name); ok {
			return &r.tasks[ti].Task
		}
		return nil
	})
	return b
}

// task returns the store's task the core decided on.
func (b *batch) task(t *transition.Task) (*run, *task) {
	r := b.s.runs[t.Run.ID]
	return r, r.tasks[t.Ref]
}

// apply applies the result of an attempt (transition.Batch.Apply); src is
// the result's index.
func (b *batch) apply(src int, res *store.TaskResult) store.CompletionOutcome {
	r := b.s.runs[res.RunID]
	if r == nil {
		return store.CompletionOutcome{Outcome: store.OutcomeStale}
	}
	var t *transition.Task
	if ti, ok := r.indexOf(res.Step); ok {
		t = &r.tasks[ti].Task
	}
	return b.tr.Apply(src, &r.Run, t, res)
}

// settle applies what the core decided. It first completes the mapped
// tasks whose last element resolved (their outputs are all here), then
// writes, in this order, as pgstore does: the tasks' new states and timers;
// the events of the decisions (transition.Batch.Log); what the runs that
// ended cancel, and their onfailure tasks; the tasks queued again; the
// elements created and admitted; last the children made ready, counted
// down here (the store's lock makes the countdown exactly-once).
func (b *batch) settle() {
	s, now := b.s, b.now
	for i := 0; i < len(b.tr.Collect); i++ {
		c := b.tr.Collect[i]
		r, m := b.task(c.Task)
		outputs := make([][]byte, len(m.elems))
		for j, e := range m.elems {
			outputs[j] = r.tasks[e].Output
		}
		b.tr.Complete(c, outputs)
	}
	// Before anything is written: a child that cannot be created fails
	// its task, a decision like the others.
	b.createChildren()

	for _, ct := range b.tr.Changed {
		r, t := b.task(ct)
		if t.Finished {
			t.finishedAt = now
		}
		if t.Consume {
			t.Output, t.Held, t.signal = t.signal, false, nil
		}
		if t.WritesTimer() {
			heap.Push(&s.timers, timerEntry{wake: t.WakeAt, run: r, task: t.Ref, Attempt: t.Attempt, claim: t.Claim})
		}
	}
	for _, e := range b.tr.Log() {
		s.runs[e.Run.ID].events = append(s.runs[e.Run.ID].events, store.Event{At: now, Step: e.Step, Type: e.Type, Attempt: e.Attempt, Detail: e.Detail})
	}

	for _, tr := range b.tr.Ended {
		r := s.runs[tr.ID]
		r.rec.FinishedAt = now
		if tr.End != transition.EndCompleted {
			for _, i := range r.order() {
				if t := r.tasks[i]; tr.End.Cancels(t.Status, t.Kind) {
					t.Status, t.finishedAt = store.TaskCancelled, now
					r.event(now, i, store.EventCancelled, t.Attempt, "")
				}
			}
		}
		if of := r.shape.onFailure; tr.End.QueuesOnFailure() && of >= 0 && r.tasks[of].Status == store.TaskPending {
			s.enqueue(r, of, now)
			b.credited(tr.EndSrc)
		}
		if tr.End == transition.EndTimedOut || tr.End == transition.EndCancelled {
			r.timedOut = tr.End == transition.EndTimedOut
			s.announceCancel(r)
		}
	}

	for _, rq := range b.tr.Requeued {
		r, t := b.task(rq.Task)
		if t.Status == store.TaskQueued && r.Schedules(t.Kind) {
			s.enqueue(r, t.Ref, now)
			b.credited(rq.Src)
		}
	}
	for _, m := range b.tr.Mapped {
		r, t := b.task(m.Task)
		if r.Status != store.RunRunning {
			continue
		}
		s.createElements(r, t, &m)
		for i := range m.Admitted {
			s.enqueue(r, t.elems[i], now)
			b.credited(m.Src)
		}
	}
	for _, q := range b.tr.Admitted {
		r := s.runs[q.Run.ID]
		if ti, ok := r.indexOf(q.Name); ok && r.Status == store.RunRunning {
			s.enqueue(r, ti, now)
			b.credited(q.Src)
		}
	}
	for _, rs := range b.tr.Resolved {
		r, t := b.task(rs.Task)
		if r.Status != store.RunRunning {
			continue
		}
		for _, c := range r.shape.children[t.Ref] {
			ct := r.tasks[c]
			if ct.pendingParents--; ct.pendingParents == 0 && ct.Status == store.TaskPending {
				s.queueReady(r, c, now, false)
				b.credited(rs.Src)
			}
		}
	}

	for _, tr := range b.tr.Ended {
		b.childEnds(tr)
	}

	for _, tr := range b.tr.Ended {
		r, was := s.runs[tr.ID], store.RunRunning
		if b.queued[r] {
			was = store.RunQueued
		}
		s.runEnded(r, was, now)
	}
	b.reset()
}

// timeOut fails r at its deadline (transition.Batch.TimeOut).
func (b *batch) timeOut(r *run, src int) bool {
	b.ending(r)
	return b.tr.TimeOut(&r.Run, src)
}

// cancelRun cancels r (transition.Batch.CancelRun).
func (b *batch) cancelRun(r *run) bool {
	b.ending(r)
	return b.tr.CancelRun(&r.Run)
}

// ending notes, for a run about to end, whether it was QUEUED.
func (b *batch) ending(r *run) {
	if r.Status == store.RunQueued {
		if b.queued == nil {
			b.queued = make(map[*run]bool)
		}
		b.queued[r] = true
	}
}

func (b *batch) credited(src int) {
	if src >= 0 && src < len(b.credit) {
		b.credit[src]++
	}
}

// reset clears what the batch marked on the tasks and runs it changed:
// memstore keeps them for the next batch.
func (b *batch) reset() {
	for _, t := range b.tr.Changed {
		t.Dirty, t.Finished, t.OwnOutput, t.Completed, t.Timer, t.Consume, t.Requeued = false, false, false, false, "", false, false
	}
	for _, t := range b.tr.MapChanged {
		t.MapDirty = false
	}
	for _, r := range b.tr.Ended {
		r.Dirty, r.End, r.EndSrc = false, transition.EndNone, -1
	}
	b.tr.Children = nil
}
