package memstore

import (
	"time"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
)

// element describes an element task of a run: r.tasks[len(shape.tasks)+i]
// is described by r.elems[i].
type element struct {
	spec  store.NewTask
	mapTi int    // the mapped task it is an element of
	index int    // its index among that task's elements
	each  string // the parent whose output the element stands for
	item  []byte // the element
}

// spec returns what task ti was created as.
func (r *run) spec(ti int) *store.NewTask {
	if n := len(r.shape.tasks); ti >= n {
		return &r.elems[ti-n].spec
	}
	return &r.shape.tasks[ti]
}

// element returns the element task ti is, or nil.
func (r *run) element(ti int) *element {
	if n := len(r.shape.tasks); ti >= n {
		return &r.elems[ti-n]
	}
	return nil
}

// indexOf returns the index of the task named name.
func (r *run) indexOf(name string) (int, bool) {
	if ti, ok := r.shape.index[name]; ok {
		return ti, true
	}
	ti, ok := r.elemIndex[name]
	return ti, ok
}

// parentsOf returns the indexes of task ti's parents: an element has its
// mapped task's.
func (r *run) parentsOf(ti int) []int {
	if el := r.element(ti); el != nil {
		return r.shape.parents[el.mapTi]
	}
	return r.shape.parents[ti]
}

// createElements creates the elements of m, a task mapped in the batch
// (QUEUED ones are queued by the caller). A task mapped again after a
// retry reuses its elements' tasks, their attempts counting on so that an
// older attempt's late result is stale (resetElements made them released).
func (s *Store) createElements(r *run, t *task, m *transition.NewElements) {
	nt := r.spec(t.Ref)
	t.elems = make([]int, len(m.Items))
	if r.elemIndex == nil {
		r.elemIndex = make(map[string]int)
	}
	for i, item := range m.Items {
		name := store.ElementName(nt.Name, i)
		el := element{
			spec:  store.NewTask{Name: name, Kind: store.KindElement, Parents: nt.Parents, MaxAttempts: nt.MaxAttempts, Signature: nt.Signature},
			mapTi: t.Ref, index: i, each: m.Each, item: item,
		}
		if idx, ok := r.elemIndex[name]; ok {
			old := r.tasks[idx]
			r.elems[idx-len(r.shape.tasks)] = el
			fresh := r.newTask(idx, store.TaskPending)
			fresh.Attempt, fresh.released, fresh.worker = old.Attempt, old.released, old.worker
			*old = fresh
			t.elems[i] = idx
			continue
		}
		idx := len(r.tasks)
		r.elems = append(r.elems, el)
		fresh := r.newTask(idx, store.TaskPending)
		r.tasks = append(r.tasks, &fresh)
		r.elemIndex[name] = idx
		t.elems[i] = idx
	}
}

// resetElements resets the elements of mapped task ti, which a retry
// resets: they are CANCELLED, with a RETRIED event, until the task is
// mapped again and reuses them (see mapTask). Their attempts so far count
// as released.
func (r *run) resetElements(ti int, detail string, now time.Time) {
	for _, e := range r.tasks[ti].elems {
		t := r.tasks[e]
		r.event(now, e, store.EventRetried, t.Attempt, detail)
		fresh := r.newTask(e, store.TaskCancelled)
		fresh.Attempt, fresh.released, fresh.worker, fresh.finishedAt = t.Attempt, t.Attempt, t.worker, now
		*t = fresh
	}
	r.tasks[ti].elems = nil
}

// order returns the indexes of r's tasks in the order the run lists them:
// the shape's tasks, each mapped task followed by its elements in element
// order.
func (r *run) order() []int {
	n := len(r.shape.tasks)
	if len(r.elems) == 0 {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	byMap := make(map[int][]int)
	for i, el := range r.elems {
		byMap[el.mapTi] = append(byMap[el.mapTi], n+i) // appended in element order
	}
	out := make([]int, 0, len(r.tasks))
	for ti := range n {
		out = append(out, ti)
		out = append(out, byMap[ti]...)
	}
	return out
}
