package memstore

import (
	"container/heap"
	"slices"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

// Flow control: concurrency caps (store.NewRun.Concurrency) and run
// deadlines (store.NewRun.Timeout).
//
// A capped run holds its slot while it is RUNNING. A run created while
// its key's cap is reached, or while runs of the key wait before it, is
// QUEUED in the slot's queue, in run id order, with none of its tasks
// queued. Every transition that ends a run (complete, fail, cancel, time
// out) gives its slot back and admits the runs waiting first, under the
// store's lock.

// slotKey names a concurrency cap: a workflow and a concurrency key.
type slotKey struct{ workflow, key string }

// slot is the state of one concurrency cap.
type slot struct {
	key     slotKey
	limit   int    // the cap of the latest run created for the key
	running int    // RUNNING runs that hold the slot
	queue   []*run // QUEUED runs, in id order
}

// capRun puts a new or retried run under its cap: it is QUEUED in id order,
// then the slot admits what it can, which may be this run. r.rec.Status
// says which it came to.
func (s *Store) capRun(r *run, limit int, now time.Time) {
	k := slotKey{r.rec.Workflow, r.rec.ConcurrencyKey}
	sl := s.slots[k]
	if sl == nil {
		sl = &slot{key: k}
		s.slots[k] = sl
	}
	if limit > 0 {
		sl.limit = limit
	}
	r.slot = sl
	r.Status = store.RunQueued
	i, _ := slices.BinarySearchFunc(sl.queue, r, func(a, b *run) int { return compareIDs(a.rec.ID, b.rec.ID) })
	sl.queue = slices.Insert(sl.queue, i, r)
	s.admit(sl, now, false)
}

// admit makes the slot's first QUEUED runs RUNNING while it has room, and
// queues their ready tasks; when the room is one that ended runs gave back
// (given), a continuation may start them instead (queueReady).
func (s *Store) admit(sl *slot, now time.Time, given bool) {
	for sl.running < sl.limit && len(sl.queue) > 0 {
		r := sl.queue[0]
		sl.queue = sl.queue[1:]
		sl.running++
		r.Status = store.RunRunning
		for _, i := range r.order() {
			t := r.tasks[i]
			if t.Status == store.TaskPending && t.pendingParents == 0 && i != r.shape.onFailure && r.spec(i).Kind != store.KindElement {
				if given {
					s.queueReady(r, i, now, true)
				} else {
					s.enqueue(r, i, now)
				}
			}
		}
	}
}

// runEnded gives back what a run that just finished held: its slot, when
// it was RUNNING under a cap, or its place in the slot's queue.
func (s *Store) runEnded(r *run, was store.RunStatus, now time.Time) {
	sl := r.slot
	if sl == nil {
		return
	}
	switch was {
	case store.RunRunning:
		sl.running--
	case store.RunQueued:
		if i := slices.Index(sl.queue, r); i >= 0 {
			sl.queue = slices.Delete(sl.queue, i, i+1)
		}
	}
	s.admit(sl, now, true)
}

// dropSlot forgets the slot of a pruned run when nothing holds it.
func (s *Store) dropSlot(r *run) {
	if sl := r.slot; sl != nil && sl.running == 0 && len(sl.queue) == 0 {
		delete(s.slots, sl.key)
	}
}

// arm sets the run's deadline timer from now, when it has a timeout.
func (s *Store) arm(r *run, now time.Time) {
	if r.Timeout <= 0 {
		return
	}
	r.rec.Deadline = now.Add(r.Timeout)
	heap.Push(&s.timers, timerEntry{wake: r.rec.Deadline, run: r, task: deadlineTask})
}

// deadlineTask is the task index of a run's deadline timer.
const deadlineTask = -1
