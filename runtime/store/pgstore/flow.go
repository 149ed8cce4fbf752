package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// Flow control: concurrency caps and run deadlines (migration 006).
//
// Lock order. A writer locks runs first (in id order), then slots (in
// (workflow, key) order), then the fair queue's tenant rows (Enqueue). A
// trigger locks no run before its slots: the runs it inserts are its own.
// An admission picks QUEUED runs with SKIP LOCKED, so a transaction that
// holds slots never waits for a run: the transaction holding a QUEUED run
// is cancelling it or failing it at its deadline (neither needs a slot),
// or refusing to retry it, or finding a late result stale, and the
// sweep (sweepSlots) admits what such a skip left waiting.

// slotKey names a concurrency cap: a workflow and a concurrency key.
type slotKey struct{ workflow, key string }

func compareSlots(a, b slotKey) int {
	return cmp.Or(cmp.Compare(a.workflow, b.workflow), cmp.Compare(a.key, b.key))
}

// slotState is a slot a trigger locked: its cap, how many runs hold it,
// how many of the trigger's runs take it, and whether QUEUED runs wait for
// it.
type slotState struct {
	lim, running, taken int
	waiting             bool
}

// lockedSlots are the slots a transaction holds.
type lockedSlots map[slotKey]*slotState

// settle writes the slots' counts with the runs the trigger admitted,
// and admits the runs waiting for a slot that has room left (its cap was
// raised, or a duplicate gave room back), whose ready tasks it returns.
func (ls lockedSlots) settle(ctx context.Context, s *Store, tx *pipeline.Tx, now pgtype.Timestamptz) ([]readyTask, error) {
	deltas := make(map[slotKey]int, len(ls))
	room := false
	for k, st := range ls {
		deltas[k] = st.taken
		room = room || st.waiting && st.running+st.taken < st.lim
	}
	if room {
		return s.admit(ctx, tx.Queue(), deltas, now, false)
	}
	var p dbsqlc.SetSlotsParams
	for k, st := range ls {
		if st.taken == 0 {
			continue // a count that did not change is not written
		}
		p.Workflows = append(p.Workflows, k.workflow)
		p.Keys = append(p.Keys, k.key)
		p.Runnings = append(p.Runnings, int32(st.running+st.taken))
	}
	if len(p.Keys) == 0 {
		return nil, nil
	}
	if err := s.q.SetSlots(ctx, tx.Queue(), p); err != nil {
		return nil, fmt.Errorf("write %d concurrency slots: %w", len(p.Keys), err)
	}
	return nil, nil
}

func slotParams(keys []slotKey) (workflows, names []string) {
	for _, k := range keys {
		workflows = append(workflows, k.workflow)
		names = append(names, k.key)
	}
	return workflows, names
}

// lockNewSlots creates or locks the slots of new capped runs, setting each
// one's cap to that of the last run in runs, and reads their counts and
// which have QUEUED runs, in one round trip.
func (s *Store) lockNewSlots(ctx context.Context, tx *pipeline.Tx, runs []store.NewRun) (lockedSlots, error) {
	lims := make(map[slotKey]int)
	for i := range runs {
		if runs[i].Concurrency > 0 {
			lims[slotKey{runs[i].Workflow, runs[i].ConcurrencyKey}] = runs[i].Concurrency
		}
	}
	keys := make([]slotKey, 0, len(lims))
	for k := range lims {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareSlots)
	var p dbsqlc.LockSlotsParams
	p.Workflows, p.Keys = slotParams(keys)
	for _, k := range keys {
		p.Lims = append(p.Lims, int32(lims[k]))
	}
	_ = s.q.LockSlots(ctx, tx.Queue(), p)
	rows, err := s.q.SlotStates(ctx, tx.Queue(), p.Workflows, p.Keys)
	if err != nil {
		return nil, fmt.Errorf("lock %d concurrency slots: %w", len(keys), err)
	}
	ls := make(lockedSlots, len(rows))
	for _, r := range rows {
		ls[slotKey{r.Workflow, r.Key}] = &slotState{lim: int(r.Lim), running: int(r.Running), waiting: r.Waiting}
	}
	if len(ls) != len(keys) {
		return nil, fmt.Errorf("lock %d concurrency slots: found %d", len(keys), len(ls))
	}
	return ls, nil
}

// readyTask is a task an admission made ready, with its QUEUED event kept
// in its row: the caller enqueues it.
type readyTask struct {
	run       dag.RunID
	workflow  string
	tenant    string
	name      string
	signature string
	// traceParent is the run's trace context (NewRun.TraceParent).
	traceParent string
	// rated: the task takes a rate limit's tokens, and so is parked by
	// its enqueue, never started by the admission's transaction.
	rated bool
	ctid  pgtype.TID // where the admission left the task's row
	// mayGo: asked for (admit's ahead), the task's tenant may have it skip
	// the fair queue, as TenantsAhead reads it.
	mayGo bool
}

// admit locks the slots (in order), moves their running counts by their
// deltas, then admits the first QUEUED runs of each into the room it has,
// in id order: they become RUNNING and their ready tasks QUEUED (returned,
// to enqueue, or with ahead to start for a continuation: see endFlow). The
// lock goes in the same round trip as the one statement that does the rest
// (AdmitQueued); a slot the transaction holds already (a trigger's) is
// locked again at no cost.
func (s *Store) admit(ctx context.Context, db dbsqlc.DBTX, deltas map[slotKey]int, now pgtype.Timestamptz, ahead bool) ([]readyTask, error) {
	keys := make([]slotKey, 0, len(deltas))
	for k := range deltas {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareSlots)
	p := dbsqlc.AdmitQueuedParams{Now: now, Ahead: ahead}
	p.Workflows, p.Keys = slotParams(keys)
	if err := s.q.LockSlotsForUpdate(ctx, db, p.Workflows, p.Keys); err != nil {
		return nil, fmt.Errorf("lock %d concurrency slots: %w", len(keys), err)
	}
	for _, k := range keys {
		p.Deltas = append(p.Deltas, int32(deltas[k]))
	}
	rows, err := s.q.AdmitQueued(ctx, db, p)
	if err != nil {
		return nil, fmt.Errorf("admit queued runs of %d concurrency slots: %w", len(keys), err)
	}
	ready := make([]readyTask, len(rows))
	for i, r := range rows {
		ready[i] = readyTask{
			run: dag.RunID(r.RunID.Bytes), workflow: r.Workflow, tenant: r.Tenant, name: r.Name, signature: r.Signature, traceParent: r.TraceParent,
			rated: r.Rated, ctid: r.RowCtid, mayGo: r.MayGo,
		}
	}
	return ready, nil
}

// enqueueReady enqueues tasks an admission made ready.
func (s *Store) enqueueReady(ctx context.Context, db dbsqlc.DBTX, ready []readyTask) error {
	if len(ready) == 0 {
		return nil
	}
	var ep dbsqlc.EnqueueParams
	for _, t := range ready {
		ep.RunIds = append(ep.RunIds, uuidOf(t.run))
		ep.Tasks = append(ep.Tasks, t.name)
		ep.Signatures = append(ep.Signatures, t.signature)
		ep.Tenants = append(ep.Tenants, t.tenant)
		ep.IfQueued = append(ep.IfQueued, false)
	}
	if err := s.enqueue(ctx, db, ep); err != nil {
		return fmt.Errorf("enqueue %d tasks of admitted runs: %w", len(ep.Tasks), err)
	}
	return nil
}

// endFlow does what runs that ended in the batch held: a completed run's
// deadline timer goes (a failed or cancelled run's timers went with the
// rest), and the slots of capped runs that were RUNNING are given back,
// admitting the runs waiting first, whose ready tasks the batch enqueues.
func (b *batch) endFlow(ctx context.Context) error {
	var completed []pgtype.UUID
	released := make(map[slotKey]int) // the runs that gave their slots back, as deltas
	var dq dbsqlc.DequeueRunsParams
	for _, r := range b.runs {
		if !r.Status.Terminal() || r.was.Terminal() {
			continue
		}
		if r.Status == store.RunCompleted && r.hasDeadline {
			completed = append(completed, uuidOf(r.ID))
		}
		switch {
		case r.slot != nil && r.was == store.RunRunning:
			released[*r.slot]--
		case r.slot != nil && r.was == store.RunQueued:
			dq.Workflows = append(dq.Workflows, r.slot.workflow)
			dq.Slots = append(dq.Slots, r.slot.key)
			dq.Ids = append(dq.Ids, uuidOf(r.ID))
		}
	}
	if len(dq.Ids) > 0 {
		if err := b.s.q.DequeueRuns(ctx, b.tx.Queue(), dq); err != nil {
			return fmt.Errorf("take %d ended runs out of their queues: %w", len(dq.Ids), err)
		}
	}
	if len(completed) > 0 {
		if err := b.s.q.DeleteTimersForRuns(ctx, b.tx.Queue(), completed); err != nil {
			return fmt.Errorf("delete deadlines of %d completed runs: %w", len(completed), err)
		}
	}
	if len(released) == 0 {
		return nil
	}
	// A continuation may start the admitted runs' ready steps, as it starts
	// children made ready, where their tenants may skip the fair queue:
	// the slot a capped run gives back goes to the next run's roots on the
	// same worker, without the queue's insert, delete and claim.
	c := b.cont
	ready, err := b.s.admit(ctx, b.tx.Queue(), released, tstz(b.now), c != nil)
	if err != nil {
		return err
	}
	for _, t := range ready {
		r := &runState{Run: transition.Run{ID: t.run, Status: store.RunRunning}, workflow: t.workflow, tenant: t.tenant, traceParent: t.traceParent}
		e := enqueueItem{run: r, name: t.name, signature: t.signature, kind: store.KindStep, src: -1, logged: true}
		if c != nil && t.mayGo {
			if c.mayGo == nil {
				c.mayGo = make(map[string]bool)
			}
			if _, seen := c.mayGo[t.tenant]; !seen {
				c.mayGo[t.tenant] = true
			}
			e.child, e.ctid = true, t.ctid
		}
		b.enqueue = append(b.enqueue, e)
	}
	return nil
}

// sweepEvery is how often the leader looks for slots with room and QUEUED
// runs that an admission skipped (see AdmitQueued).
const sweepEvery = 10 * time.Second

// sweeper rate-limits sweepSlots.
type sweeper struct {
	mu   sync.Mutex
	last time.Time
}

func (w *sweeper) due(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.last) < sweepEvery && !w.last.IsZero() {
		return false
	}
	w.last = now
	return true
}

// sweepSlots admits QUEUED runs into slots with room, at most every
// sweepEvery: the runs an admission skipped because another transaction
// held them, which did not end them after all. It returns how many tasks
// it queued.
func (s *Store) sweepSlots(ctx context.Context) (int, error) {
	if !s.sweep.due(time.Now()) {
		return 0, nil
	}
	rows, err := s.q.SlotsWithRoom(ctx, s.pool, 100)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	keys := make([]slotKey, len(rows))
	for i, r := range rows {
		keys[i] = slotKey{r.Workflow, r.Key}
	}
	n := 0
	err = s.inTx(ctx, func(tx *pipeline.Tx) error {
		deltas := make(map[slotKey]int, len(keys))
		for _, k := range keys {
			deltas[k] = 0
		}
		ready, err := s.admit(ctx, tx.Queue(), deltas, s.clock(), false)
		if err != nil {
			return err
		}
		n = len(ready)
		return s.enqueueReady(ctx, tx.Queue(), ready)
	})
	if err != nil {
		return 0, fmt.Errorf("admit queued runs: %w", err)
	}
	s.noteQueued(ctx, n)
	return n, nil
}

// pruneSlots deletes up to limit slots that no run holds or waits for.
func (s *Store) pruneSlots(ctx context.Context, limit int) error {
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		rows, err := s.q.LockIdleSlots(ctx, tx.Queue(), int32(limit))
		if err != nil {
			return fmt.Errorf("lock idle concurrency slots: %w", err)
		}
		if len(rows) == 0 {
			return errNothingToDo
		}
		keys := make([]slotKey, len(rows))
		for i, r := range rows {
			keys[i] = slotKey{r.Workflow, r.Key}
		}
		workflows, names := slotParams(keys)
		if err := s.q.DeleteSlots(ctx, tx.Queue(), workflows, names); err != nil {
			return fmt.Errorf("delete %d idle concurrency slots: %w", len(keys), err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNothingToDo) {
		return err
	}
	return nil
}
