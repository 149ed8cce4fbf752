package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/leasebook"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// A batch is one writing transaction over tasks of locked runs: completions,
// fired timers, rescues and cancellations all go through it.
//
// It works in three steps. lockRuns locks the runs (in id order: the first
// lock every writer takes) and loadTasks reads their tasks; under those
// locks only a claim can change a task of these runs, and a claim only
// turns QUEUED into RUNNING. Then the transition core (tr, the truth table
// memstore calls too) decides each transition, in order. Then flush writes
// the decision with a fixed number of array statements, whatever the batch
// size, in the order the core gives its events.
type batch struct {
	s   *Store
	tx  *pipeline.Tx
	now time.Time // the transaction's clock, read by lockRuns

	runs   map[dag.RunID]*runState
	tasks  map[taskKey]*taskState
	states []*taskState // by their transition.Task's Ref
	// tr decides the transitions (the truth table, shared with memstore);
	// flush writes what it decided.
	tr *transition.Batch

	resolved []resolvedTask // completed or skipped tasks whose children count down
	enqueue  []enqueueItem
	maps     mapWork           // elements to create and queue (map.go)
	dropped  []leasebook.Lease // leases to delete: no task holds them (RescueExpired)
	ev       events
	credit   []int         // tasks enqueued, per source index (result, timer or rescue)
	cont     *continuation // CompleteAndContinue's, or nil
	// due: the batch set a timer due at once (children.go).
	due bool
	// callers is set when tx is the caller's (SendSignalTx): the leases
	// this store saw answered are not ended in it, since it may roll back
	// and it may not set plan_cache_mode for the caller's statements.
	callers bool
}

type taskKey struct {
	run  dag.RunID
	name string
}

// runState is a locked run: its state as the transition core sees it, and
// what the store keeps beside it.
type runState struct {
	transition.Run
	workflow string
	tenant   string
	// input is the run's input when LockRuns returned it (a continuing
	// batch, an input of continuedInputMax bytes or fewer), else nil.
	input []byte
	// traceParent is the run's trace context (NewRun.TraceParent).
	traceParent string

	// Flow control (flow.go): the status when locked; the run's slot when
	// it is capped; whether it has a deadline timer.
	was         store.RunStatus
	slot        *slotKey
	hasDeadline bool
	// hasParent: a task of another run started it (children.go).
	hasParent bool
}

// taskState is a loaded task: its state as the transition core sees it,
// and the row's own bookkeeping.
type taskState struct {
	transition.Task
	key       taskKey
	run       *runState
	signature string
	children  []string
	worker    string

	// The events of the current round the row keeps (0: none).
	queuedEvent, startedEvent int64
	queuedAt, startedAt       time.Time

	lease int64      // the attempt RUNNING when loaded: its STARTED id (its entry in its lease), or 0
	ctid  pgtype.TID // where GetTasks found the row: UpdateTasks's hint
	// expectClaim is, for a task decided on its claim view (views.go),
	// the claim token UpdateTasks expects the row to be RUNNING under; 0
	// for a task read in this transaction.
	expectClaim int64
}

type resolvedTask struct {
	t   *taskState
	src int
}

type enqueueItem struct {
	run       *runState
	name      string
	signature string
	kind      store.TaskKind
	attempt   int
	src       int  // source credited with the enqueue, or -1
	logged    bool // its QUEUED event is kept in its row already
	child     bool // made ready by DecrementChildren or an admission, not rate-limited, its tenant's turn: a continuation may start it
	// parentsHere: every parent of the child resolved in this batch.
	parentsHere bool
	ctid        pgtype.TID // where DecrementChildren left the child's row
	continued   bool       // started by continueReady: not enqueued
}

func (s *Store) newBatch(tx *pipeline.Tx, sources int) *batch {
	b := &batch{
		s:      s,
		tx:     tx,
		runs:   make(map[dag.RunID]*runState),
		tasks:  make(map[taskKey]*taskState),
		credit: make([]int, sources),
	}
	b.tr = transition.New(time.Time{}, func(r *transition.Run, name string) *transition.Task {
		if t := b.tasks[taskKey{r.ID, name}]; t != nil {
			return &t.Task
		}
		return nil
	})
	return b
}

// state returns the taskState of a task the core decided on.
func (b *batch) state(t *transition.Task) *taskState { return b.states[t.Ref] }

// add keeps a loaded task.
func (b *batch) add(t *taskState) {
	t.Run = &t.run.Run
	t.Name = t.key.name
	t.Ref = len(b.states)
	b.states = append(b.states, t)
	b.tasks[t.key] = t
}

// lockRuns locks the runs with these ids and reads the transaction's clock.
// With skipLocked, runs another transaction holds are left out.
func (b *batch) lockRuns(ctx context.Context, ids []dag.RunID, skipLocked bool) error {
	slices.SortFunc(ids, func(a, b dag.RunID) int { return compareIDs(a, b) })
	ids = slices.Compact(ids)
	add := func(r dbsqlc.LockRunsRow) {
		b.now = r.Now.Time
		b.tr.Now = b.now
		rs := &runState{
			Run: transition.Run{
				ID: dag.RunID(r.ID.Bytes), Status: store.RunStatus(r.Status), Pending: int(r.Pending), EndSrc: -1,
				Timeout: time.Duration(r.TimeoutMs) * time.Millisecond,
			},
			workflow: r.Workflow, tenant: r.Tenant, was: store.RunStatus(r.Status),
			hasDeadline: r.HasDeadline, input: r.Input, traceParent: r.TraceParent, hasParent: r.HasParent,
		}
		if r.Slot.Valid {
			rs.slot = &slotKey{r.Workflow, r.Slot.String}
		}
		b.runs[rs.ID] = rs
	}
	if skipLocked {
		rows, err := b.s.q.LockRunsSkipLocked(ctx, b.tx.Queue(), dbsqlc.LockRunsSkipLockedParams{MaxInput: b.inputMax(), Now: b.s.clock(), Ids: uuids(ids)})
		if err != nil {
			return fmt.Errorf("lock %d runs: %w", len(ids), err)
		}
		for _, r := range rows {
			add(dbsqlc.LockRunsRow(r))
		}
		return nil
	}
	rows, err := b.s.q.LockRuns(ctx, b.tx.Queue(), dbsqlc.LockRunsParams{MaxInput: b.inputMax(), Now: b.s.clock(), Ids: uuids(ids)})
	if err != nil {
		return fmt.Errorf("lock %d runs: %w", len(ids), err)
	}
	for _, r := range rows {
		add(r)
	}
	return nil
}

// continuedInputMax is the largest run input, in bytes, that a continuing
// batch reads with the runs it locks: the row holds it, so it costs no
// page, and the steps the batch starts then need no lookup of their run.
// A larger input is read by ContinueTasks, once a run.
const continuedInputMax = 1024

// inputMax is LockRuns's max_input: continuedInputMax for a batch that
// may start steps, -1 (no input) for the others.
func (b *batch) inputMax() int32 {
	if b.cont == nil {
		return -1
	}
	return continuedInputMax
}

// lockRunsAndLoad locks the runs with these ids, as lockRuns, and the runs
// of keys, and reads the tasks with those keys, in one round trip: the
// tasks are read by a statement of their own sent right after the locks (so
// it sees what the last holder of each lock wrote), without waiting for
// their result.
func (b *batch) lockRunsAndLoad(ctx context.Context, ids []dag.RunID, keys []taskKey) error {
	if len(keys) == 0 {
		return b.lockRuns(ctx, ids, false)
	}
	kIDs := make([]pgtype.UUID, len(keys))
	kNames := make([]string, len(keys))
	for i, k := range keys {
		ids = append(ids, k.run)
		kIDs[i], kNames[i] = uuidOf(k.run), k.name
	}
	b.tx.QueryAhead(pipeline.Record(func(db dbsqlc.DBTX) error {
		_, err := b.s.q.GetTasks(ctx, db, kIDs, kNames)
		return err
	}))
	if err := b.lockRuns(ctx, ids, false); err != nil {
		return err
	}
	return b.readTasks(ctx, kIDs, kNames)
}

// loadTasks reads the tasks with these keys that belong to locked runs.
func (b *batch) loadTasks(ctx context.Context, keys []taskKey) error {
	var ids []pgtype.UUID
	var names []string
	for _, k := range keys {
		if b.runs[k.run] != nil && b.tasks[k] == nil {
			ids = append(ids, uuidOf(k.run))
			names = append(names, k.name)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return b.readTasks(ctx, ids, names)
}

// readTasks reads tasks by key and keeps those of locked runs not loaded
// yet.
func (b *batch) readTasks(ctx context.Context, ids []pgtype.UUID, names []string) error {
	rows, err := b.s.q.GetTasks(ctx, b.tx.Queue(), ids, names)
	if err != nil {
		return fmt.Errorf("read %d tasks: %w", len(ids), err)
	}
	for _, r := range rows {
		k := taskKey{dag.RunID(r.RunID.Bytes), r.Name}
		if b.runs[k.run] == nil || b.tasks[k] != nil {
			continue // its run is not locked, or a key came twice
		}
		t := &taskState{
			Task: transition.Task{
				Kind: store.TaskKind(r.Kind), Status: store.TaskStatus(r.Status), Attempt: int(r.Attempt), Claim: r.Claim, MaxAttempts: int(r.MaxAttempts),
				Err: r.Error, Reason: r.Reason, WakeAt: timeOf(r.WakeAt), Held: r.Held,
				MapPending: int(r.PendingParents), Elements: int(r.Elements), NextElement: int(r.NextElement), MapLimit: int(r.MapLimit),
			},
			key: k, run: b.runs[k.run], signature: r.Signature, children: r.Children, worker: r.Worker,
			queuedEvent: r.QueuedEvent.Int64, queuedAt: timeOf(r.QueuedAt),
			startedEvent: r.StartedEvent.Int64, startedAt: timeOf(r.StartedAt),
			ctid: r.RowCtid,
		}
		if t.Status == store.TaskRunning {
			t.lease = t.startedEvent
		}
		b.add(t)
	}
	return nil
}

func (b *batch) changed() bool {
	if len(b.tr.Changed) > 0 || len(b.tr.Events) > 0 {
		return true
	}
	for _, r := range b.runs {
		if r.Dirty {
			return true
		}
	}
	return false
}

// apply applies the result of an attempt (see transition.Batch.Apply); src
// is the result's index.
func (b *batch) apply(src int, res *store.TaskResult) store.CompletionOutcome {
	var r *transition.Run
	if rs := b.runs[res.RunID]; rs != nil {
		r = &rs.Run
	}
	var t *transition.Task
	if ts := b.tasks[taskKey{res.RunID, res.Step}]; ts != nil {
		t = &ts.Task
	}
	return b.tr.Apply(src, r, t, res)
}

// decided turns what the core decided into the batch's writes: the events
// of its decisions (a COMPLETED of a task's own result is kept in its row
// by UpdateTasks), the tasks queued again with the events their rows kept
// of the round that ended, the parents whose children count down, and
// the elements to create and queue.
func (b *batch) decided() {
	for _, e := range b.tr.Events {
		b.ev.add(e.Run.ID, e.Step, e.Type, e.Attempt, e.Detail)
	}
	for _, rq := range b.tr.Requeued {
		t := b.state(rq.Task)
		if t.queuedEvent != 0 {
			attempt := t.Attempt
			if t.startedEvent > t.queuedEvent {
				attempt-- // queued before the claim that counted this attempt
			}
			b.ev.addKept(t.key.run, t.queuedEvent, t.queuedAt, t.key.name, store.EventQueued, attempt)
		}
		if t.startedEvent != 0 {
			b.ev.addKept(t.key.run, t.startedEvent, t.startedAt, t.key.name, store.EventStarted, t.Attempt)
		}
		t.queuedEvent, t.startedEvent = 0, 0
		b.enqueue = append(b.enqueue, enqueueItem{run: t.run, name: t.key.name, signature: t.signature, kind: t.Kind, attempt: t.Attempt, src: rq.Src})
	}
	for _, rs := range b.tr.Resolved {
		if t := b.state(rs.Task); len(t.children) > 0 {
			b.resolved = append(b.resolved, resolvedTask{t, rs.Src})
		}
	}
	b.decideElements()
}

// statusStrings are the statuses a run's end cancels, as CancelTasks takes
// them.
func statusStrings(e transition.End) []string {
	sts := e.Statuses()
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = string(st)
	}
	return out
}

// flush writes the batch: a fixed sequence of array statements, pipelined
// so that only the statements whose results it needs wait for a round trip.
// The rest go with the transaction's COMMIT.
func (b *batch) flush(ctx context.Context) error {
	q, pl, now := b.s.q, b.tx.Queue(), tstz(b.now)
	b.decided()

	// The decided task transitions, and their timers.
	if n := len(b.tr.Changed); n > 0 {
		p := dbsqlc.UpdateTasksParams{
			RunIds: make([]pgtype.UUID, 0, n), Names: make([]string, 0, n), Statuses: make([]string, 0, n),
			Outputs: make([][]byte, 0, n), Errors: make([]string, 0, n), Reasons: make([]string, 0, n),
			WakeAts: make([]pgtype.Timestamptz, 0, n), FinishedAts: make([]pgtype.Timestamptz, 0, n),
			LogCompleted: make([]bool, 0, n), NewRounds: make([]bool, 0, n), Hints: make([]pgtype.TID, 0, n),
			ExpectClaim: make([]int64, 0, n),
		}
		var tp dbsqlc.UpsertTimersParams
		for _, ct := range b.tr.Changed {
			t := b.state(ct)
			p.RunIds = append(p.RunIds, uuidOf(t.key.run))
			p.Names = append(p.Names, t.key.name)
			p.Statuses = append(p.Statuses, string(t.Status))
			p.Outputs = append(p.Outputs, t.Output)
			p.Errors = append(p.Errors, t.Err)
			p.Reasons = append(p.Reasons, t.Reason)
			p.WakeAts = append(p.WakeAts, tstz(t.WakeAt))
			fin := pgtype.Timestamptz{}
			if t.Finished {
				fin = now
			}
			p.FinishedAts = append(p.FinishedAts, fin)
			p.LogCompleted = append(p.LogCompleted, t.Completed)
			p.NewRounds = append(p.NewRounds, t.Requeued)
			p.Hints = append(p.Hints, t.ctid)
			p.ExpectClaim = append(p.ExpectClaim, t.expectClaim)
			if t.WritesTimer() {
				tp.RunIds = append(tp.RunIds, uuidOf(t.key.run))
				tp.Tasks = append(tp.Tasks, t.key.name)
				tp.Attempts = append(tp.Attempts, int32(t.Attempt))
				tp.Claims = append(tp.Claims, t.Claim)
				tp.WakeAts = append(tp.WakeAts, tstz(t.WakeAt))
				tp.Kinds = append(tp.Kinds, t.Timer)
			}
		}
		if err := q.UpdateTasks(ctx, pl, p); err != nil {
			return fmt.Errorf("update %d tasks: %w", len(p.Names), err)
		}
		if err := b.writeMapTasks(ctx); err != nil {
			return err
		}
		if err := b.consumeSignals(ctx); err != nil {
			return err
		}
		if len(tp.Tasks) > 0 {
			if err := q.UpsertTimers(ctx, pl, tp); err != nil {
				return fmt.Errorf("write %d timers: %w", len(tp.Tasks), err)
			}
		}
	}

	// Runs: their new states are decided already.
	var rp dbsqlc.UpdateRunsParams
	for _, r := range b.runs {
		if !r.Dirty {
			continue
		}
		rp.Ids = append(rp.Ids, uuidOf(r.ID))
		rp.Statuses = append(rp.Statuses, string(r.Status))
		rp.Pendings = append(rp.Pendings, int32(max(r.Pending, 0)))
		var f dag.Failure
		if r.Failure != nil {
			f = *r.Failure
		}
		rp.FailureSteps = append(rp.FailureSteps, f.Step)
		rp.FailureAttempts = append(rp.FailureAttempts, int32(f.Attempt))
		rp.FailureMessages = append(rp.FailureMessages, f.Message)
	}
	if len(rp.Ids) > 0 {
		rp.Now = now
		if err := q.UpdateRuns(ctx, pl, rp); err != nil {
			return fmt.Errorf("update %d runs: %w", len(rp.Ids), err)
		}
	}
	if err := b.childEnds(ctx); err != nil {
		return err
	}
	// Runs that failed or were cancelled: queue entries first (a claim
	// holding one waits for nothing we hold), then timers, then tasks.
	var failed, timedOut, cancelled []pgtype.UUID
	for _, r := range b.tr.Ended {
		switch r.End {
		case transition.EndTimedOut:
			timedOut = append(timedOut, uuidOf(r.ID))
		case transition.EndFailed:
			failed = append(failed, uuidOf(r.ID))
		case transition.EndCancelled:
			cancelled = append(cancelled, uuidOf(r.ID))
		}
	}
	if len(timedOut) > 0 {
		// Workers running their steps hear of it on commit, as of a
		// cancellation.
		if err := q.NotifyCancelled(ctx, pl, timedOut); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
	}
	if ended := slices.Concat(failed, timedOut, cancelled); len(ended) > 0 {
		if err := q.DeleteReadyForRuns(ctx, pl, ended); err != nil {
			return fmt.Errorf("dequeue tasks of %d ended runs: %w", len(ended), err)
		}
		if err := q.DeleteTimersForRuns(ctx, pl, ended); err != nil {
			return fmt.Errorf("delete timers of %d ended runs: %w", len(ended), err)
		}
		for _, c := range []struct {
			ids []pgtype.UUID
			end transition.End
		}{{failed, transition.EndFailed}, {timedOut, transition.EndTimedOut}, {cancelled, transition.EndCancelled}} {
			if len(c.ids) == 0 {
				continue
			}
			rows, err := q.CancelTasks(ctx, pl, dbsqlc.CancelTasksParams{
				Now: now, RunIds: c.ids, Statuses: statusStrings(c.end), IncludeOnfailure: c.end.Cancels(store.TaskPending, store.KindOnFailure),
			})
			if err != nil {
				return fmt.Errorf("cancel tasks of %d runs: %w", len(c.ids), err)
			}
			// In task order, as the core orders them (transition.Batch.Log).
			slices.SortFunc(rows, func(x, y dbsqlc.CancelTasksRow) int {
				if c := compareIDs(x.RunID.Bytes, y.RunID.Bytes); c != 0 {
					return c
				}
				if c := cmp.Compare(x.Seq, y.Seq); c != 0 {
					return c
				}
				return cmp.Compare(x.Element, y.Element)
			})
			for _, row := range rows {
				b.ev.add(dag.RunID(row.RunID.Bytes), row.Name, store.EventCancelled, int(row.Attempt), "")
			}
		}
		if failed := slices.Concat(failed, timedOut); len(failed) > 0 {
			rows, err := q.QueueOnFailure(ctx, pl, failed)
			if err != nil {
				return fmt.Errorf("queue onfailure tasks of %d runs: %w", len(failed), err)
			}
			for _, row := range rows {
				r := b.runs[dag.RunID(row.RunID.Bytes)]
				b.enqueue = append(b.enqueue, enqueueItem{
					run: r, name: row.Name, signature: row.Signature, kind: store.KindOnFailure, attempt: int(row.Attempt), src: r.EndSrc,
				})
			}
		}
	}

	// The events go in before the children are counted down, so that a
	// child's QUEUED, which DecrementChildren takes from the log's
	// sequence, comes after the events of the parents that made it ready:
	// a SKIPPED, a sleep's WOKEN and COMPLETED (a COMPLETED kept in a row
	// took its id in UpdateTasks). With them go the QUEUED events of the
	// tasks enqueued so far (requeued and onfailure tasks), which no
	// child's depends on. It is still the batch's one InsertEvents,
	// queued in the pipeline as before: this order costs no statement and
	// no round trip.
	for _, e := range b.enqueue {
		if e.live() && !e.logged {
			b.ev.add(e.run.ID, e.name, store.EventQueued, e.attempt, "")
		}
	}
	if err := b.ev.insert(ctx, q, pl, now); err != nil {
		return err
	}
	// Elements take their QUEUED events' ids from the sequence after the
	// events that made them ready: their mapped task's MAPPED, or the
	// COMPLETED of the element whose slot they take.
	if err := b.writeElements(ctx); err != nil {
		return err
	}

	// Children of completed and skipped tasks, in runs still RUNNING. The
	// result that brought a child to zero last in batch order is credited.
	if len(b.resolved) > 0 {
		var ids []pgtype.UUID
		var children []string
		lastSrc := make(map[taskKey]int)
		for _, rt := range b.resolved {
			if rt.t.run.Status != store.RunRunning {
				continue
			}
			for _, c := range rt.t.children {
				ids = append(ids, uuidOf(rt.t.key.run))
				children = append(children, c)
				lastSrc[taskKey{rt.t.key.run, c}] = rt.src
			}
		}
		if len(ids) > 0 {
			b.sendAhead(ctx, ids)
			rows, err := q.DecrementChildren(ctx, pl, dbsqlc.DecrementChildrenParams{Now: now, RunIds: ids, Children: children})
			if err != nil {
				return fmt.Errorf("count down %d children: %w", len(ids), err)
			}
			if err := b.readAhead(ctx); err != nil {
				return err
			}
			for _, row := range rows {
				if store.TaskStatus(row.Status) != store.TaskQueued {
					continue
				}
				k := taskKey{dag.RunID(row.RunID.Bytes), row.Name}
				b.enqueue = append(b.enqueue, enqueueItem{run: b.runs[k.run], name: k.name, signature: row.Signature, kind: store.KindStep, src: lastSrc[k], logged: true, child: !row.Rated, parentsHere: row.ParentsHere, ctid: row.RowCtid})
			}
		}
	}

	if err := b.endFlow(ctx); err != nil {
		return err
	}
	if err := b.continueReady(ctx); err != nil {
		return err
	}

	// The ready queue.
	var ep dbsqlc.EnqueueParams
	for _, e := range b.enqueue {
		if !e.live() {
			continue
		}
		if e.continued {
			if e.src >= 0 {
				b.credit[e.src]++ // made ready, and started
			}
			continue
		}
		ep.RunIds = append(ep.RunIds, uuidOf(e.run.ID))
		ep.Tasks = append(ep.Tasks, e.name)
		ep.Signatures = append(ep.Signatures, e.signature)
		ep.Tenants = append(ep.Tenants, e.run.tenant)
		ep.IfQueued = append(ep.IfQueued, false)
		if e.src >= 0 {
			b.credit[e.src]++
		}
	}

	// Enqueue goes last but for the lease removal: it locks the tenants'
	// rows of the fair queue, which every transaction enqueueing for those
	// tenants needs, so they are held for as short a while as can be, up
	// to COMMIT.
	if len(ep.Tasks) > 0 {
		if err := b.s.enqueue(ctx, pl, ep); err != nil {
			return fmt.Errorf("enqueue %d tasks: %w", len(ep.Tasks), err)
		}
	}
	return b.endLeases(ctx, pl)
}

// live reports whether flush enqueues e. A run that ended in this batch
// only enqueues its onfailure task: its other requeued tasks were
// cancelled.
func (e enqueueItem) live() bool {
	return e.run.Schedules(e.kind)
}

// endLeases deletes the leases in b.dropped and those whose every attempt
// this store saw answered (leasebook.Book.TakeDone), by a plan that takes
// the index (deleteLeases).
//
// A lease taken from the book here stays when the transaction fails: the
// leader deletes it once it expires, as every lease no task holds.
func (b *batch) endLeases(ctx context.Context, db dbsqlc.DBTX) error {
	if b.callers {
		return nil
	}
	leases := append(b.dropped, b.s.leases.TakeDone()...)
	if len(leases) == 0 {
		return nil
	}
	ids, tokens := make([]int64, len(leases)), make([]int64, len(leases))
	for i, l := range leases {
		ids[i], tokens[i] = l.ID, l.Token
	}
	if err := b.s.deleteLeases(ctx, db, ids, tokens); err != nil {
		return fmt.Errorf("delete %d leases: %w", len(ids), err)
	}
	return nil
}

func compareIDs(a, b dag.RunID) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
