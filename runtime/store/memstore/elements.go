package memstore

import (
	"time"

	"github.com/dagenhq/dagen/runtime/store"
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

// mapping is a mapped task's state once it is mapped.
type mapping struct {
	elems   []int // task indexes of its elements, in element order
	next    int   // the next element to queue
	pending int   // elements not resolved yet
	limit   int   // elements in flight at once, 0 for all
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

// mapTask maps the RUNNING KindMap task ti: it creates the elements of
// res, queues as many as its limit allows and leaves the task MAPPING. It
// returns how many elements it queued.
func (s *Store) mapTask(r *run, ti int, res *store.TaskResult, now time.Time) int {
	t := &r.tasks[ti]
	nt := r.spec(ti)
	m := &mapping{elems: make([]int, len(res.Elements)), pending: len(res.Elements), limit: res.Limit}
	if r.elemIndex == nil {
		r.elemIndex = make(map[string]int)
	}
	for i, item := range res.Elements {
		name := store.ElementName(nt.Name, i)
		el := element{
			spec:  store.NewTask{Name: name, Kind: store.KindElement, Parents: nt.Parents, MaxAttempts: nt.MaxAttempts, Signature: nt.Signature},
			mapTi: ti, index: i, each: res.Each, item: item,
		}
		if idx, ok := r.elemIndex[name]; ok {
			// Mapped again after a retry: the element's task is reused,
			// its attempts counting on so that an older attempt's late
			// result is stale (resetElements made them released).
			old := &r.tasks[idx]
			r.elems[idx-len(r.shape.tasks)] = el
			*old = task{status: store.TaskPending, attempt: old.attempt, released: old.released, worker: old.worker}
			m.elems[i] = idx
			continue
		}
		idx := len(r.tasks)
		r.elems = append(r.elems, el)
		r.tasks = append(r.tasks, task{status: store.TaskPending})
		r.elemIndex[name] = idx
		m.elems[i] = idx
	}
	t = &r.tasks[ti] // r.tasks may have moved
	t.status = store.TaskMapping
	t.mapping = m
	r.event(now, ti, store.EventMapped, t.attempt, store.MappedDetail(len(res.Elements), res.Limit))
	return s.admitElements(r, m, now)
}

// admitElements queues the mapped task's next elements while its limit
// allows, and returns how many it queued.
func (s *Store) admitElements(r *run, m *mapping, now time.Time) int {
	n := store.AdmitElements(m.next, len(m.elems), m.pending, m.limit)
	for range n {
		s.enqueue(r, m.elems[m.next], now)
		m.next++
	}
	return n
}

// elementResolved counts a resolved element of a mapped task down: the next
// element waiting for a slot is queued, and the last one completes the
// mapped task with the elements' outputs. It returns how many tasks it
// queued.
func (s *Store) elementResolved(r *run, ti int, now time.Time) int {
	el := r.element(ti)
	mt := &r.tasks[el.mapTi]
	if r.rec.Status != store.RunRunning || mt.status != store.TaskMapping || mt.mapping == nil {
		return 0
	}
	m := mt.mapping
	m.pending--
	n := s.admitElements(r, m, now)
	if m.pending > 0 {
		return n
	}
	outputs := make([][]byte, len(m.elems))
	for i, e := range m.elems {
		outputs[i] = r.tasks[e].output
	}
	mt.output = store.CollectOutputs(outputs)
	r.event(now, el.mapTi, store.EventCompleted, mt.attempt, "")
	return n + s.resolve(r, el.mapTi, store.TaskCompleted, now)
}

// resetElements resets the elements of mapped task ti, which a retry
// resets: they are CANCELLED, with a RETRIED event, until the task is
// mapped again and reuses them (see mapTask). Their attempts so far count
// as released.
func (r *run) resetElements(ti int, detail string, now time.Time) {
	m := r.tasks[ti].mapping
	if m == nil {
		return
	}
	for _, e := range m.elems {
		t := &r.tasks[e]
		r.event(now, e, store.EventRetried, t.attempt, detail)
		*t = task{status: store.TaskCancelled, attempt: t.attempt, released: t.attempt, worker: t.worker, finished: now}
	}
	r.tasks[ti].mapping = nil
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
