package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// Now implements store.Scheduler.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	now, err := s.q.StoreNow(ctx, s.pool, s.clock())
	if err != nil {
		return time.Time{}, fmt.Errorf("read the clock: %w", err)
	}
	return now.Time, nil
}

func (s *Store) upsertSchedule(ctx context.Context, db dbsqlc.DBTX, sc store.Schedule) (bool, error) {
	n, err := s.q.UpsertSchedule(ctx, db, dbsqlc.UpsertScheduleParams{
		Workflow: sc.Workflow, Tenant: sc.Tenant, Name: sc.Name, Cron: sc.Cron, Zone: sc.Zone,
		Catchup: string(sc.Catchup), Input: sc.Input, Declared: sc.Declared, NextAt: tstz(sc.NextAt), Now: s.clock(),
	})
	if err != nil {
		return false, fmt.Errorf("write schedule %q: %w", sc.Name, err)
	}
	return n > 0, nil
}

// RegisterSchedules implements store.Scheduler.
func (s *Store) RegisterSchedules(ctx context.Context, workflow string, declared []store.Schedule) error {
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		var p dbsqlc.DeleteUndeclaredParams
		p.Workflow = workflow
		for _, sc := range declared {
			sc.Workflow, sc.Declared = workflow, true
			if _, err := s.upsertSchedule(ctx, tx.Queue(), sc); err != nil {
				return err
			}
			p.Tenants = append(p.Tenants, sc.Tenant)
			p.Names = append(p.Names, sc.Name)
		}
		return s.q.DeleteUndeclared(ctx, tx.Queue(), p)
	})
	if err != nil {
		return fmt.Errorf("register the schedules of %q: %w", workflow, err)
	}
	return nil
}

// PutSchedule implements store.Scheduler.
func (s *Store) PutSchedule(ctx context.Context, sc store.Schedule) error {
	sc.Declared = false
	wrote, err := s.upsertSchedule(ctx, s.pool, sc)
	if err != nil {
		return err
	}
	if !wrote {
		return fmt.Errorf("schedule %q: %w", sc.Name, store.ErrScheduleDeclared)
	}
	return nil
}

// ListSchedules implements store.Scheduler.
func (s *Store) ListSchedules(ctx context.Context, workflow, tenant string) ([]store.Schedule, error) {
	rows, err := s.q.ListSchedules(ctx, s.pool, workflow, tenant)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return schedulesOf(rows), nil
}

func schedulesOf(rows []dbsqlc.DagenSchedule) []store.Schedule {
	out := make([]store.Schedule, len(rows))
	for i, r := range rows {
		out[i] = store.Schedule{
			ScheduleRef: store.ScheduleRef{Workflow: r.Workflow, Tenant: r.Tenant, Name: r.Name},
			Cron:        r.Cron, Zone: r.Zone, Catchup: store.Catchup(r.Catchup), Input: r.Input,
			Declared: r.Declared, Paused: r.Paused,
			NextAt: timeOf(r.NextAt), LastAt: timeOf(r.LastAt), CreatedAt: timeOf(r.CreatedAt), UpdatedAt: timeOf(r.UpdatedAt),
		}
		if r.LastRun.Valid {
			out[i].LastRun = dag.RunID(r.LastRun.Bytes)
		}
	}
	return out
}

func notFound(ref store.ScheduleRef) error {
	return fmt.Errorf("schedule %s: %w", ref, store.ErrScheduleNotFound)
}

// PauseSchedule implements store.Scheduler.
func (s *Store) PauseSchedule(ctx context.Context, ref store.ScheduleRef, paused bool, next time.Time) error {
	n, err := s.q.PauseSchedule(ctx, s.pool, dbsqlc.PauseScheduleParams{
		Paused: paused, NextAt: tstz(next), Now: s.clock(), Workflow: ref.Workflow, Tenant: ref.Tenant, Name: ref.Name,
	})
	if err != nil {
		return fmt.Errorf("pause schedule %q: %w", ref.Name, err)
	}
	if n == 0 {
		return notFound(ref)
	}
	return nil
}

// DeleteSchedule implements store.Scheduler.
func (s *Store) DeleteSchedule(ctx context.Context, ref store.ScheduleRef) error {
	n, err := s.q.DeleteSchedule(ctx, s.pool, dbsqlc.DeleteScheduleParams{Workflow: ref.Workflow, Tenant: ref.Tenant, Name: ref.Name})
	if err != nil {
		return fmt.Errorf("delete schedule %q: %w", ref.Name, err)
	}
	if n == 0 {
		return notFound(ref)
	}
	return nil
}

// DueSchedules implements store.Scheduler.
func (s *Store) DueSchedules(ctx context.Context, workflows []string, limit int) ([]store.Schedule, time.Time, error) {
	rows, err := s.q.DueSchedules(ctx, s.pool, dbsqlc.DueSchedulesParams{Now: s.clock(), Workflows: workflows, Max: int32(max(min(limit, 1<<30), 0))})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read due schedules: %w", err)
	}
	var due []dbsqlc.DagenSchedule
	for _, r := range rows {
		if r.NextAt.Valid { // else the one row of the clock alone: none is due
			due = append(due, dbsqlc.DagenSchedule{
				Workflow: r.Workflow, Tenant: r.Tenant, Name: r.Name, Cron: r.Cron, Zone: r.Zone, Catchup: r.Catchup,
				Input: r.Input, Declared: r.Declared, Paused: r.Paused, NextAt: r.NextAt, LastAt: r.LastAt, LastRun: r.LastRun,
				CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
			})
		}
	}
	return schedulesOf(due), rows[0].Now.Time, nil
}

// errNotDue makes FireSchedule's transaction roll back: the schedule is
// gone, paused, fired already or being fired.
var errNotDue = errors.New("schedule not due")

// FireSchedule implements store.Scheduler: in one transaction, it locks
// the schedule's row if it is still due at f.Due and no other transaction
// holds it (SKIP LOCKED: that one is firing it), creates the runs as
// CreateRuns does, and moves the schedule on.
func (s *Store) FireSchedule(ctx context.Context, f store.ScheduleFiring) (bool, error) {
	graphs, rp, err := s.prepare(f.Runs)
	if err != nil {
		return false, err
	}
	queued := 0
	fire := func(tx *pipeline.Tx) error {
		locked, err := s.q.LockDueSchedule(ctx, tx.Queue(), dbsqlc.LockDueScheduleParams{
			Workflow: f.Workflow, Tenant: f.Tenant, Name: f.Name, Due: tstz(f.Due),
		})
		if err != nil {
			return fmt.Errorf("lock schedule: %w", err)
		}
		if len(locked) == 0 {
			return errNotDue
		}
		ap := dbsqlc.AdvanceScheduleParams{NextAt: tstz(f.Next), Now: s.clock(), Workflow: f.Workflow, Tenant: f.Tenant, Name: f.Name}
		if n := len(f.Runs); n > 0 {
			if _, queued, _, err = s.createWithin(ctx, tx, f.Runs, graphs, rp, store.ClaimParams{}, false); err != nil {
				return err
			}
			last := f.Runs[n-1].ID
			if !f.Runs[n-1].Existing.IsZero() {
				last = f.Runs[n-1].Existing
			}
			ap.LastAt, ap.LastRun = tstz(f.Last), uuidOf(last)
		}
		return s.q.AdvanceSchedule(ctx, tx.Queue(), ap)
	}
	err = s.parts.WithRanges(ctx, f.Runs, func() error { return s.inTx(ctx, fire) })
	if errors.Is(err, errNotDue) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("fire schedule %q: %w", f.Name, err)
	}
	s.noteQueued(ctx, queued)
	return true, nil
}
