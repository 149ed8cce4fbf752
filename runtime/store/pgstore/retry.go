package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/retryplan"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// RetryRun implements store.Retrier in one transaction, with the batch's
// pieces: the run is locked as every writer locks it (lockRuns), the queue
// entries and timers of the run go (a finished run has only its onfailure
// task's), its tasks are read and the plan is made in Go (as memstore
// makes it); then the reset tasks' rows are rewritten with the
// events they kept written out to the log first, the run is RUNNING again,
// the events are logged, the ready tasks enqueued and the leases of reset
// RUNNING attempts removed.
//
// Fencing: a reset task keeps its attempt (the next claim counts on from
// it), so a late result of an older attempt is stale; its max_attempts
// grows by the attempts it had, so its budget starts over. No column was
// added for this.
func (s *Store) RetryRun(ctx context.Context, id dag.RunID, rt store.Retry) (store.RetryResult, error) {
	var res store.RetryResult
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		var err error
		res, err = s.retryLocked(ctx, tx, id, rt)
		return err
	})
	if err != nil {
		return store.RetryResult{}, fmt.Errorf("retry run %s: %w", id, err)
	}
	return res, nil
}

func (s *Store) retryLocked(ctx context.Context, tx *pipeline.Tx, id dag.RunID, rt store.Retry) (store.RetryResult, error) {
	// Before anything else: a retry reopens a finished run, which must not
	// be in a range being dropped (see dropPartition).
	switch dropping, err := s.q.FencePartition(ctx, tx.Queue(), uuidOf(id)); {
	case errors.Is(err, pgx.ErrNoRows):
		return store.RetryResult{}, store.ErrRunNotFound // no range holds its id
	case err != nil:
		return store.RetryResult{}, fmt.Errorf("fence the run's partition: %w", err)
	case dropping:
		return store.RetryResult{}, fmt.Errorf("run %s is being pruned: %w", id, store.ErrRunNotFound)
	}
	b := s.newBatch(tx, 0)
	if err := b.lockRuns(ctx, []dag.RunID{id}, false); err != nil {
		return store.RetryResult{}, err
	}
	r := b.runs[id]
	if r == nil {
		return store.RetryResult{}, store.ErrRunNotFound
	}
	// Queue entries first (a claim holding one waits for nothing we hold),
	// then timers: in a finished run only the onfailure task has any, and
	// it is reset. A claim that held a queue entry has committed once the
	// entry is gone, and no other can start: the tasks read next are the
	// last word. A refused retry rolls this back.
	ids := uuids([]dag.RunID{id})
	if err := s.q.DeleteReadyForRuns(ctx, tx.Queue(), ids); err != nil {
		return store.RetryResult{}, fmt.Errorf("dequeue tasks: %w", err)
	}
	if err := s.q.DeleteTimersForRuns(ctx, tx.Queue(), ids); err != nil {
		return store.RetryResult{}, fmt.Errorf("delete timers: %w", err)
	}
	rows, err := s.q.RetryLoadTasks(ctx, tx.Queue(), uuidOf(id))
	if err != nil {
		return store.RetryResult{}, fmt.Errorf("read tasks: %w", err)
	}
	// Elements are not planned: a mapped task that is reset maps anew, and
	// its elements are reset with it (CANCELLED until it does: see
	// InsertElements, which reuses them).
	var tasks []retryplan.Task
	var planned []int // rows' indexes, by plan index
	for i, row := range rows {
		if store.TaskKind(row.Kind) == store.KindElement {
			continue
		}
		tasks = append(tasks, retryplan.Task{Name: row.Name, Kind: store.TaskKind(row.Kind), Children: row.Children, Status: store.TaskStatus(row.Status)})
		planned = append(planned, i)
	}
	p, err := retryplan.Make(r.Status, tasks, rt)
	if err != nil {
		return store.RetryResult{}, err
	}
	reset := make([]bool, len(rows))
	enqueue := make([]bool, len(rows))
	pendingParents := make([]int, len(rows))
	resetMaps := make(map[string]bool)
	for j, i := range planned {
		reset[i], enqueue[i], pendingParents[i] = p.Reset[j], p.Enqueue[j], p.PendingParents[j]
		if p.Reset[j] && store.TaskKind(rows[i].Kind) == store.KindMap {
			resetMaps[rows[i].Name] = true
		}
	}
	for i, row := range rows {
		if step, _, ok := store.ParseElement(row.Name); ok && resetMaps[step] {
			reset[i] = true
		}
	}

	var rp dbsqlc.RetryResetTasksParams
	rp.RunID = uuidOf(id)
	var retried events // after the kept events, which are older
	var ep dbsqlc.EnqueueParams
	detail := rt.Detail()
	for i, row := range rows {
		if !reset[i] {
			continue
		}
		attempt := int(row.Attempt)
		if row.QueuedEvent.Valid {
			qa := attempt
			if row.StartedEvent.Valid && row.StartedEvent.Int64 > row.QueuedEvent.Int64 {
				qa-- // queued before the claim that counted this attempt
			}
			b.ev.addKept(id, row.QueuedEvent.Int64, row.QueuedAt.Time, row.Name, store.EventQueued, qa)
		}
		if row.StartedEvent.Valid {
			b.ev.addKept(id, row.StartedEvent.Int64, row.StartedAt.Time, row.Name, store.EventStarted, attempt)
		}
		if row.CompletedEvent.Valid {
			b.ev.addKept(id, row.CompletedEvent.Int64, row.FinishedAt.Time, row.Name, store.EventCompleted, attempt)
		}
		retried.add(id, row.Name, store.EventRetried, attempt, detail)
		status := store.TaskPending
		if store.TaskKind(row.Kind) == store.KindElement {
			status = store.TaskCancelled
		}
		if enqueue[i] && r.slot == nil { // a capped run's wait for admission
			status = store.TaskQueued
			retried.add(id, row.Name, store.EventQueued, attempt, "")
			ep.RunIds = append(ep.RunIds, uuidOf(id))
			ep.Tasks = append(ep.Tasks, row.Name)
			ep.Signatures = append(ep.Signatures, row.Signature)
			ep.Tenants = append(ep.Tenants, r.tenant)
			ep.IfQueued = append(ep.IfQueued, false)
		}
		rp.Names = append(rp.Names, row.Name)
		rp.Statuses = append(rp.Statuses, string(status))
		rp.PendingParents = append(rp.PendingParents, int32(pendingParents[i]))
	}
	if err := s.q.RetryResetTasks(ctx, tx.Queue(), rp); err != nil {
		return store.RetryResult{}, fmt.Errorf("reset %d tasks: %w", len(rp.Names), err)
	}
	status := store.RunRunning
	if r.slot != nil {
		status = store.RunQueued // until its slot admits it, below
	}
	if err := s.q.RetryRunning(ctx, tx.Queue(), dbsqlc.RetryRunningParams{
		Status: string(status), Now: tstz(b.now), Pending: int32(p.Pending), ID: uuidOf(id),
	}); err != nil {
		return store.RetryResult{}, fmt.Errorf("update run: %w", err)
	}
	if r.Timeout > 0 {
		if err := s.q.InsertDeadlines(ctx, tx.Queue(), ids); err != nil {
			return store.RetryResult{}, fmt.Errorf("arm the deadline: %w", err)
		}
	}
	b.ev.p.RunIds = append(b.ev.p.RunIds, retried.p.RunIds...)
	b.ev.p.Ids = append(b.ev.p.Ids, retried.p.Ids...)
	b.ev.p.Ats = append(b.ev.p.Ats, retried.p.Ats...)
	b.ev.p.Tasks = append(b.ev.p.Tasks, retried.p.Tasks...)
	b.ev.p.Types = append(b.ev.p.Types, retried.p.Types...)
	b.ev.p.Attempts = append(b.ev.p.Attempts, retried.p.Attempts...)
	b.ev.p.Details = append(b.ev.p.Details, retried.p.Details...)
	if err := b.ev.insert(ctx, s.q, tx.Queue(), tstz(b.now)); err != nil {
		return store.RetryResult{}, err
	}
	// Enqueue goes last but for the lease removal, as in flush: it locks
	// the tenant's row of the fair queue.
	if len(ep.Tasks) > 0 {
		if err := s.enqueue(ctx, tx.Queue(), ep); err != nil {
			return store.RetryResult{}, fmt.Errorf("enqueue %d tasks: %w", len(ep.Tasks), err)
		}
	}
	if r.slot != nil {
		if err := s.q.QueueRuns(ctx, tx.Queue(), dbsqlc.QueueRunsParams{
			Workflows: []string{r.slot.workflow}, Slots: []string{r.slot.key}, Ids: ids,
		}); err != nil {
			return store.RetryResult{}, fmt.Errorf("queue the run for its cap: %w", err)
		}
		ready, err := s.admit(ctx, tx.Queue(), map[slotKey]int{*r.slot: 0}, tstz(b.now), false)
		if err != nil {
			return store.RetryResult{}, err
		}
		if err := s.enqueueReady(ctx, tx.Queue(), ready); err != nil {
			return store.RetryResult{}, err
		}
	}
	if err := b.endLeases(ctx, tx.Queue()); err != nil {
		return store.RetryResult{}, err
	}
	return p.Result, nil
}
