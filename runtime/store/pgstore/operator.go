package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// cancelBatch bounds the runs one CancelRuns transaction cancels, so that
// it holds their locks briefly and its statements stay small.
const cancelBatch = 100

// filterArgs are a RunFilter's optional filters as query parameters.
type filterArgs struct {
	workflow, tenant       pgtype.Text
	statuses               []string // never nil: NULL would match nothing
	createdFrom, createdTo pgtype.Timestamptz
	children               pgtype.Text // store.ChildFilter; NULL: every run
}

func filterOf(f store.RunFilter) filterArgs {
	a := filterArgs{
		workflow:    pgtype.Text{String: f.Workflow, Valid: f.Workflow != ""},
		tenant:      pgtype.Text{String: f.Tenant, Valid: f.Tenant != ""},
		statuses:    make([]string, 0, len(f.Statuses)),
		createdFrom: tstz(f.CreatedFrom),
		createdTo:   tstz(f.CreatedTo),
		children:    pgtype.Text{String: string(f.Children), Valid: f.Children != store.AllRuns},
	}
	for _, s := range f.Statuses {
		a.statuses = append(a.statuses, string(s))
	}
	return a
}

func cursorOf(id dag.RunID) pgtype.UUID {
	if id.IsZero() {
		return pgtype.UUID{}
	}
	return uuidOf(id)
}

// pageSize is f.Limit as the interface defines it.
func pageSize(limit int) int {
	switch {
	case limit <= 0:
		return store.DefaultPageSize
	case limit > store.MaxPageSize:
		return store.MaxPageSize
	}
	return limit
}

// ListRuns implements store.Operator: one index range scan, newest first,
// planned for the filters that are set (PlanEachExecution goes with the
// query, in the same round trip).
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	limit := pageSize(f.Limit)
	a := filterOf(f)
	var rows []dbsqlc.ListRunsRow
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		if err := s.planEachExecution(ctx, tx.Queue()); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		var err error
		rows, err = s.q.ListRuns(ctx, tx.Queue(), dbsqlc.ListRunsParams{
			Workflow: a.workflow, Tenant: a.tenant, Statuses: a.statuses,
			CreatedFrom: a.createdFrom, CreatedTo: a.createdTo, Children: a.children,
			After: cursorOf(f.After), Max: int32(limit + 1), // one more: is there a next page?
		})
		return err
	})
	if err != nil {
		return store.RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	var page store.RunPage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = dag.RunID(rows[limit-1].ID.Bytes)
	}
	page.Runs = make([]store.RunSummary, len(rows))
	for i, r := range rows {
		sum := store.RunSummary{
			ID: dag.RunID(r.ID.Bytes), Workflow: r.Workflow, Tenant: r.Tenant,
			Status: store.RunStatus(r.Status), CreatedAt: timeOf(r.CreatedAt), FinishedAt: timeOf(r.FinishedAt),
		}
		if sum.Status == store.RunFailed && r.FailureStep.Valid {
			sum.Failure = &dag.Failure{RunID: sum.ID, Step: r.FailureStep.String, Attempt: int(r.FailureAttempt.Int32), Message: r.FailureMessage.String}
		}
		page.Runs[i] = sum
	}
	return page, nil
}

// CountRuns implements store.Operator.
func (s *Store) CountRuns(ctx context.Context, f store.RunFilter) (map[store.RunStatus]int, error) {
	a := filterOf(f)
	var rows []dbsqlc.CountRunsRow
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		if err := s.planEachExecution(ctx, tx.Queue()); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		var err error
		rows, err = s.q.CountRuns(ctx, tx.Queue(), dbsqlc.CountRunsParams{
			Workflow: a.workflow, Tenant: a.tenant, Statuses: a.statuses,
			CreatedFrom: a.createdFrom, CreatedTo: a.createdTo, Children: a.children,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	counts := make(map[store.RunStatus]int, len(rows))
	for _, r := range rows {
		counts[store.RunStatus(r.Status)] = int(r.N)
	}
	return counts, nil
}

// CancelRuns implements store.Operator. Each batch is a transaction that
// reads up to cancelBatch RUNNING candidates after the previous batch's
// last, oldest first, then cancels them as CancelRun does (cancelLocked):
// locked in id order, rechecked, their tasks, queue entries and timers
// ended, their workers notified on commit.
func (s *Store) CancelRuns(ctx context.Context, f store.RunFilter, limit int) (int, error) {
	a := filterOf(f)
	total := 0
	var after pgtype.UUID
	for total < limit {
		n, more := 0, false
		err := s.inTx(ctx, func(tx *pipeline.Tx) error {
			if err := s.planEachExecution(ctx, tx.Queue()); err != nil {
				return fmt.Errorf("plan: %w", err)
			}
			want := min(cancelBatch, limit-total)
			cands, err := s.q.RunningRunIDs(ctx, tx.Queue(), dbsqlc.RunningRunIDsParams{
				Workflow: a.workflow, Tenant: a.tenant, CreatedFrom: a.createdFrom, CreatedTo: a.createdTo,
				Children: a.children, After: after, Max: int32(want),
			})
			if err != nil {
				return fmt.Errorf("read running runs: %w", err)
			}
			if len(cands) == 0 {
				return errNothingToDo
			}
			more = len(cands) == want
			after = cands[len(cands)-1]
			ids := make([]dag.RunID, len(cands))
			for i, c := range cands {
				ids[i] = dag.RunID(c.Bytes)
			}
			_, cancelled, err := s.cancelLocked(ctx, tx, ids)
			n = len(cancelled)
			return err
		})
		if err != nil && !errors.Is(err, errNothingToDo) {
			return total, fmt.Errorf("cancel runs: %w", err)
		}
		if err == nil {
			total += n
		}
		if !more {
			break
		}
	}
	return total, nil
}

// cancelLocked cancels the runs with these ids that are RUNNING, in tx: it
// locks them (in id order, as every writer does), marks them CANCELLED,
// queues their workers' notifications and flushes the batch, whose flush
// cancels their unfinished tasks and removes their queue entries, timers
// and leases. It returns how many of the runs exist and those it
// cancelled, with errNothingToDo when it cancels none (none was found, or
// none was RUNNING).
func (s *Store) cancelLocked(ctx context.Context, tx *pipeline.Tx, ids []dag.RunID) (found int, cancelled []dag.RunID, err error) {
	b := s.newBatch(tx, 0)
	if err := b.lockRuns(ctx, ids, false); err != nil {
		return 0, nil, err
	}
	for _, id := range ids { // sorted by lockRuns
		r := b.runs[id]
		if r != nil && b.tr.CancelRun(&r.Run) {
			cancelled = append(cancelled, id)
		}
	}
	if len(cancelled) == 0 {
		return len(b.runs), nil, errNothingToDo
	}
	// Workers running their steps hear of it on commit (SubscribeCancels).
	if err := s.q.NotifyCancelled(ctx, tx.Queue(), uuids(cancelled)); err != nil {
		return len(b.runs), nil, fmt.Errorf("notify: %w", err)
	}
	if err := b.flush(ctx); err != nil {
		return len(b.runs), nil, err
	}
	return len(b.runs), cancelled, nil
}
