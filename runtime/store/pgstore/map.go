package pgstore

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// mapWork is what a batch does for mapped tasks (see migration 004), decided
// in Go under the runs' locks like the rest of the batch and written by
// flush: the elements of tasks mapped in the batch, the elements that take
// the slots of resolved ones, the mapped tasks whose state changed and those
// whose last element resolved.
type mapWork struct {
	create  []newElements
	queue   []queuedElement
	dirty   []*taskState
	collect []collectItem
}

type newElements struct {
	t        *taskState
	items    [][]byte
	each     string
	admitted int  // the first admitted elements start QUEUED
	reuse    bool // mapped before (a retry reset it): its elements may exist
	src      int
}

// elementWindow bounds the elements of a mapped task without a limit that
// are in flight at once: the others wait PENDING and are queued as
// elements resolve. It keeps the transaction that maps 100,000 elements
// from also queueing them all (a long fair-queue insert during which no
// element could run; see docs/performance.md, "The element window of a
// mapped step"), and it is far more than workers run at once.
const elementWindow = 10_000

type queuedElement struct {
	run  *runState
	name string
	src  int
}

type collectItem struct {
	t   *taskState
	src int
}

// mapTask maps a RUNNING mapped task: it becomes MAPPING, and flush
// creates its elements and queues as many as its limit allows.
func (b *batch) mapTask(t *taskState, res *store.TaskResult, src int) {
	n := len(res.Elements)
	limit := elementWindow
	if res.Limit > 0 {
		limit = res.Limit
	}
	admitted := store.AdmitElements(0, n, n, limit)
	reuse := t.elements > 0
	t.status = store.TaskMapping
	t.elements, t.pending, t.nextElement, t.mapLimit = n, n, admitted, limit
	b.touch(t)
	b.mapDirty(t)
	b.event(t, store.EventMapped, store.MappedDetail(n, res.Limit))
	b.maps.create = append(b.maps.create, newElements{t: t, items: res.Elements, each: res.Each, admitted: admitted, reuse: reuse, src: src})
}

func (b *batch) mapDirty(t *taskState) {
	if !t.mapDirty {
		t.mapDirty = true
		b.maps.dirty = append(b.maps.dirty, t)
	}
}

// elementResolved counts a resolved element of a RUNNING run down on its
// mapped task (which the batch loaded with it): the next element waiting
// for a slot is queued, and the last one has the mapped task collected.
func (b *batch) elementResolved(t *taskState, src int) {
	if t.run.status != store.RunRunning {
		return
	}
	step, _, ok := store.ParseElement(t.key.name)
	m := b.tasks[taskKey{t.key.run, step}]
	if !ok || m == nil || m.status != store.TaskMapping {
		return
	}
	m.pending--
	b.mapDirty(m)
	for range store.AdmitElements(m.nextElement, m.elements, m.pending, m.mapLimit) {
		b.maps.queue = append(b.maps.queue, queuedElement{run: t.run, name: store.ElementName(step, m.nextElement), src: src})
		m.nextElement++
	}
	if m.pending == 0 {
		b.maps.collect = append(b.maps.collect, collectItem{m, src})
	}
}

// collect completes the mapped tasks whose last element resolved in the
// batch with their elements' outputs, in element order: those stored
// before, read back, and those of the batch, not written yet. It runs
// before flush, so the completions flow through it like any other.
func (b *batch) collect(ctx context.Context) error {
	for _, c := range b.maps.collect {
		m := c.t
		if m.run.status != store.RunRunning {
			continue
		}
		rows, err := b.s.q.ElementOutputs(ctx, b.tx, dbsqlc.ElementOutputsParams{
			RunID: uuidOf(m.key.run), Prefix: m.key.name + "[", N: int32(m.elements),
		})
		if err != nil {
			return fmt.Errorf("read the outputs of %s's elements: %w", m.key.name, err)
		}
		if len(rows) != m.elements {
			return fmt.Errorf("read the outputs of %s's elements: found %d of %d", m.key.name, len(rows), m.elements)
		}
		outputs := make([][]byte, m.elements)
		for _, r := range rows {
			outputs[r.Element] = r.Output
		}
		for i := range outputs {
			if t := b.tasks[taskKey{m.key.run, store.ElementName(m.key.name, i)}]; t != nil && t.dirty {
				outputs[i] = t.output // resolved in this batch: not written yet
			}
		}
		m.output = store.CollectOutputs(outputs)
		m.logCompleted = true
		b.resolve(m, store.TaskCompleted, c.src)
	}
	return nil
}

// writeMapTasks writes the mapping state of the mapped tasks that changed.
func (b *batch) writeMapTasks(ctx context.Context) error {
	if len(b.maps.dirty) == 0 {
		return nil
	}
	var p dbsqlc.UpdateMapTasksParams
	for _, t := range b.maps.dirty {
		p.RunIds = append(p.RunIds, uuidOf(t.key.run))
		p.Names = append(p.Names, t.key.name)
		p.Elements = append(p.Elements, int32(t.elements))
		p.Pendings = append(p.Pendings, int32(max(t.pending, 0)))
		p.NextElements = append(p.NextElements, int32(t.nextElement))
		p.MapLimits = append(p.MapLimits, int32(t.mapLimit))
	}
	if err := b.s.q.UpdateMapTasks(ctx, b.tx, p); err != nil {
		return fmt.Errorf("update %d mapped tasks: %w", len(p.Names), err)
	}
	return nil
}

// writeElements creates the elements of the tasks mapped in the batch and
// queues the elements admitted in place of resolved ones, in runs still
// RUNNING, and adds the queued ones to the batch's enqueue list.
func (b *batch) writeElements(ctx context.Context) error {
	q, now := b.s.q, tstz(b.now)
	var fresh, reused dbsqlc.InsertElementsParams
	for _, c := range b.maps.create {
		if c.t.run.status != store.RunRunning {
			continue
		}
		p := &fresh
		if c.reuse {
			p = &reused
		}
		p.RunIds = append(p.RunIds, uuidOf(c.t.key.run))
		p.Maps = append(p.Maps, c.t.key.name)
		p.Eaches = append(p.Eaches, c.each)
		ord := int32(len(p.RunIds))
		for i, item := range c.items {
			p.MapOrds = append(p.MapOrds, ord)
			p.Indexes = append(p.Indexes, int32(i))
			p.Items = append(p.Items, item)
			p.Queued = append(p.Queued, i < c.admitted)
		}
		for i := range c.admitted {
			b.enqueue = append(b.enqueue, enqueueItem{
				run: c.t.run, name: store.ElementName(c.t.key.name, i), signature: c.t.signature,
				kind: store.KindElement, src: c.src, logged: true,
			})
		}
	}
	if len(fresh.Indexes) > 0 {
		fresh.Now = now
		if err := q.InsertElements(ctx, b.tx, fresh); err != nil {
			return fmt.Errorf("create %d elements: %w", len(fresh.Indexes), err)
		}
	}
	if len(reused.Indexes) > 0 {
		reused.Now = now
		if err := q.ReuseElements(ctx, b.tx, dbsqlc.ReuseElementsParams(reused)); err != nil {
			return fmt.Errorf("create %d elements of tasks mapped again: %w", len(reused.Indexes), err)
		}
	}
	var qp dbsqlc.QueueElementsParams
	srcs := make(map[taskKey]int)
	for _, e := range b.maps.queue {
		if e.run.status != store.RunRunning {
			continue
		}
		qp.RunIds = append(qp.RunIds, uuidOf(e.run.id))
		qp.Names = append(qp.Names, e.name)
		srcs[taskKey{e.run.id, e.name}] = e.src
	}
	if len(qp.Names) == 0 {
		return nil
	}
	qp.Now = now
	rows, err := q.QueueElements(ctx, b.tx, qp)
	if err != nil {
		return fmt.Errorf("queue %d elements: %w", len(qp.Names), err)
	}
	for _, row := range rows {
		k := taskKey{dag.RunID(row.RunID.Bytes), row.Name}
		b.enqueue = append(b.enqueue, enqueueItem{
			run: b.runs[k.run], name: k.name, signature: row.Signature, kind: store.KindElement, src: srcs[k], logged: true,
		})
	}
	return nil
}

// withMappedTasks adds to keys the mapped task of each element among
// them, which completing the element counts down: once, however many of
// its elements the batch has.
func withMappedTasks(keys []taskKey) []taskKey {
	var added map[taskKey]bool
	for _, k := range keys {
		step, _, ok := store.ParseElement(k.name)
		if !ok {
			continue
		}
		mk := taskKey{k.run, step}
		if added[mk] {
			continue
		}
		if added == nil {
			added = make(map[taskKey]bool)
		}
		added[mk] = true
		keys = append(keys, mk)
	}
	return keys
}
