package pgstore

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// mapWork is what a batch writes for mapped tasks (see migration 004), as
// the transition core decided it: the elements of tasks mapped in the
// batch and the elements that take the slots of resolved ones.
type mapWork struct {
	create []transition.NewElements
	queue  []transition.QueuedElement
}

// decideElements takes the elements the core decided to create and queue.
func (b *batch) decideElements() {
	b.maps.create = b.tr.Mapped
	b.maps.queue = b.tr.Admitted
}

// collect completes the mapped tasks whose last element resolved in the
// batch with their elements' outputs, in element order: those stored
// before, read back, and those of the batch, not written yet. It runs
// before flush, so the completions flow through it like any other.
func (b *batch) collect(ctx context.Context) error {
	for i := 0; i < len(b.tr.Collect); i++ { // Complete may add more
		c := b.tr.Collect[i]
		m := b.state(c.Task)
		if m.run.Status != store.RunRunning {
			continue
		}
		rows, err := b.s.q.ElementOutputs(ctx, b.tx.Queue(), dbsqlc.ElementOutputsParams{
			RunID: uuidOf(m.key.run), Prefix: m.key.name + "[", N: int32(m.Elements),
		})
		if err != nil {
			return fmt.Errorf("read the outputs of %s's elements: %w", m.key.name, err)
		}
		if len(rows) != m.Elements {
			return fmt.Errorf("read the outputs of %s's elements: found %d of %d", m.key.name, len(rows), m.Elements)
		}
		outputs := make([][]byte, m.Elements)
		for _, r := range rows {
			outputs[r.Element] = r.Output
		}
		for i := range outputs {
			if t := b.tasks[taskKey{m.key.run, store.ElementName(m.key.name, i)}]; t != nil && t.Dirty {
				outputs[i] = t.Output // resolved in this batch: not written yet
			}
		}
		b.tr.Complete(c, outputs)
	}
	return nil
}

// writeMapTasks writes the mapping state of the mapped tasks that changed.
func (b *batch) writeMapTasks(ctx context.Context) error {
	if len(b.tr.MapChanged) == 0 {
		return nil
	}
	var p dbsqlc.UpdateMapTasksParams
	for _, ct := range b.tr.MapChanged {
		t := b.state(ct)
		p.RunIds = append(p.RunIds, uuidOf(t.key.run))
		p.Names = append(p.Names, t.key.name)
		p.Elements = append(p.Elements, int32(t.Elements))
		p.Pendings = append(p.Pendings, int32(max(t.MapPending, 0)))
		p.NextElements = append(p.NextElements, int32(t.NextElement))
		p.MapLimits = append(p.MapLimits, int32(t.MapLimit))
	}
	if err := b.s.q.UpdateMapTasks(ctx, b.tx.Queue(), p); err != nil {
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
		t := b.state(c.Task)
		if t.run.Status != store.RunRunning {
			continue
		}
		p := &fresh
		if c.Again {
			p = &reused
		}
		p.RunIds = append(p.RunIds, uuidOf(t.key.run))
		p.Maps = append(p.Maps, t.key.name)
		p.Eaches = append(p.Eaches, c.Each)
		ord := int32(len(p.RunIds))
		for i, item := range c.Items {
			p.MapOrds = append(p.MapOrds, ord)
			p.Indexes = append(p.Indexes, int32(i))
			p.Items = append(p.Items, item)
			p.Queued = append(p.Queued, i < c.Admitted)
		}
		for i := range c.Admitted {
			b.enqueue = append(b.enqueue, enqueueItem{
				run: t.run, name: store.ElementName(t.key.name, i), signature: t.signature,
				kind: store.KindElement, src: c.Src, logged: true,
			})
		}
	}
	if len(fresh.Indexes) > 0 {
		fresh.Now = now
		if err := q.InsertElements(ctx, b.tx.Queue(), fresh); err != nil {
			return fmt.Errorf("create %d elements: %w", len(fresh.Indexes), err)
		}
	}
	if len(reused.Indexes) > 0 {
		reused.Now = now
		if err := q.ReuseElements(ctx, b.tx.Queue(), dbsqlc.ReuseElementsParams(reused)); err != nil {
			return fmt.Errorf("create %d elements of tasks mapped again: %w", len(reused.Indexes), err)
		}
	}
	var qp dbsqlc.QueueElementsParams
	srcs := make(map[taskKey]int)
	for _, e := range b.maps.queue {
		if e.Run.Status != store.RunRunning {
			continue
		}
		qp.RunIds = append(qp.RunIds, uuidOf(e.Run.ID))
		qp.Names = append(qp.Names, e.Name)
		srcs[taskKey{e.Run.ID, e.Name}] = e.Src
	}
	if len(qp.Names) == 0 {
		return nil
	}
	qp.Now = now
	rows, err := q.QueueElements(ctx, b.tx.Queue(), qp)
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
