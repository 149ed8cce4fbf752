package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// NextTimer implements store.Store.
func (s *Store) NextTimer(ctx context.Context) (time.Time, bool, error) {
	at, err := s.q.NextTimer(ctx, s.pool)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read next timer: %w", err)
	}
	return timeOf(at), at.Valid, nil
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, id dag.RunID) (store.Run, error) {
	r, err := s.q.GetRun(ctx, s.pool, uuidOf(id))
	return runOf(id, r, err)
}

// RunStatus implements store.StatusReader: one lookup by primary key that
// does not read the run's input.
func (s *Store) RunStatus(ctx context.Context, id dag.RunID) (store.RunStatus, error) {
	status, err := s.q.GetRunStatus(ctx, s.pool, uuidOf(id))
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("read status of run %s: %w", id, store.ErrRunNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("read status of run %s: %w", id, err)
	}
	return store.RunStatus(status), nil
}

// ListTasks implements store.Store.
func (s *Store) ListTasks(ctx context.Context, id dag.RunID) ([]store.Task, error) {
	rows, err := s.q.ListTasks(ctx, s.pool, uuidOf(id))
	return tasksOf(id, rows, err)
}

// ReadRun implements store.RunReader: the run and its tasks are read by
// two statements sent together (readRuns).
func (s *Store) ReadRun(ctx context.Context, id dag.RunID) (store.Run, []store.Task, error) {
	runs, err := s.readRuns(ctx, pipeline.New(s.pool), []dag.RunID{id})
	if err != nil {
		return store.Run{}, nil, err
	}
	return runs[0].Run, runs[0].Tasks, nil
}

// runOf turns GetRun's row into a run.
func runOf(id dag.RunID, r dbsqlc.GetRunRow, err error) (store.Run, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Run{}, fmt.Errorf("get run %s: %w", id, store.ErrRunNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	run := store.Run{
		ID:          id,
		Workflow:    r.Workflow,
		Fingerprint: r.Fingerprint,
		Tenant:      r.Tenant,
		Status:      store.RunStatus(r.Status),
		Input:       r.Input,
		CreatedAt:   timeOf(r.CreatedAt),
		FinishedAt:  timeOf(r.FinishedAt),
		Key:         r.Key,
		Deadline:    timeOf(r.DeadlineAt),
	}
	if r.Slot.Valid {
		run.ConcurrencyKey = r.Slot.String
	}
	if r.ParentRun.Valid {
		run.Parent = &store.ParentLink{
			Run: dag.RunID(r.ParentRun.Bytes), Task: r.ParentTask.String, Attempt: int(r.ParentAttempt.Int32), Result: r.ResultTask.String,
		}
	}
	if r.FailureStep.Valid {
		run.Failure = &dag.Failure{
			RunID:   id,
			Step:    r.FailureStep.String,
			Attempt: int(r.FailureAttempt.Int32),
			Message: r.FailureMessage.String,
		}
	}
	return run, nil
}

// tasksOf turns ListTasks' rows into tasks.
func tasksOf(id dag.RunID, rows []dbsqlc.ListTasksRow, err error) ([]store.Task, error) {
	if err != nil {
		return nil, fmt.Errorf("list tasks of run %s: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("list tasks of run %s: %w", id, store.ErrRunNotFound)
	}
	tasks := make([]store.Task, len(rows))
	for i, r := range rows {
		tasks[i] = store.Task{
			Name:      r.Name,
			Kind:      store.TaskKind(r.Kind),
			Parents:   parentsOf(r),
			Signature: r.Signature,
			Status:    store.TaskStatus(r.Status),
			Attempt:   int(r.Attempt),
			Claim:     r.Claim,
			Output:    r.Output,
			Error:     r.Error,
			Reason:    r.Reason,
			WakeAt:    timeOf(r.WakeAt),
			Worker:    r.Worker,
			Finished:  timeOf(r.FinishedAt),
			Elements:  int(r.Elements),
			Element:   int(r.Element),
		}
	}
	return tasks, nil
}

// parentsOf returns a task's parents, nil when it has none (as created).
func parentsOf(r dbsqlc.ListTasksRow) []string {
	if len(r.Parents) == 0 {
		return nil
	}
	return r.Parents
}

// ListEvents implements store.Store.
func (s *Store) ListEvents(ctx context.Context, id dag.RunID) ([]store.Event, error) {
	rows, err := s.q.ListEvents(ctx, s.pool, uuidOf(id))
	if err != nil {
		return nil, fmt.Errorf("list events of run %s: %w", id, err)
	}
	if len(rows) == 0 {
		ok, err := s.q.RunExists(ctx, s.pool, uuidOf(id))
		if err != nil {
			return nil, fmt.Errorf("list events of run %s: %w", id, err)
		}
		if !ok {
			return nil, fmt.Errorf("list events of run %s: %w", id, store.ErrRunNotFound)
		}
	}
	evs := make([]store.Event, len(rows))
	for i, r := range rows {
		evs[i] = store.Event{
			At:      timeOf(r.At),
			Step:    r.Task,
			Type:    store.EventType(r.Type),
			Attempt: int(r.Attempt),
			Detail:  r.Detail,
		}
	}
	return evs, nil
}
