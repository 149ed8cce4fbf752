package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

// Now implements store.Scheduler.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return s.now(), nil
}

// putLocked creates s or updates the schedule with its name, keeping
// whether it is paused, and its next slot unless its expression or zone
// changed.
func (s *Store) putLocked(sc store.Schedule, now time.Time) {
	if s.schedules == nil {
		s.schedules = make(map[store.ScheduleRef]*store.Schedule)
	}
	sc.UpdatedAt = now
	if old := s.schedules[sc.ScheduleRef]; old != nil {
		sc.Paused, sc.CreatedAt, sc.LastAt, sc.LastRun = old.Paused, old.CreatedAt, old.LastAt, old.LastRun
		if old.Cron == sc.Cron && old.Zone == sc.Zone {
			sc.NextAt = old.NextAt
		}
	} else {
		sc.CreatedAt = now
	}
	sc.Input = slices.Clone(sc.Input)
	s.schedules[sc.ScheduleRef] = &sc
}

// RegisterSchedules implements store.Scheduler.
func (s *Store) RegisterSchedules(ctx context.Context, workflow string, declared []store.Schedule) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.lock()
	defer s.unlock()
	now := s.now()
	keep := make(map[store.ScheduleRef]bool, len(declared))
	for _, sc := range declared {
		sc.Workflow, sc.Declared = workflow, true
		s.putLocked(sc, now)
		keep[sc.ScheduleRef] = true
	}
	for ref, sc := range s.schedules {
		if ref.Workflow == workflow && sc.Declared && !keep[ref] {
			delete(s.schedules, ref)
		}
	}
	return nil
}

// PutSchedule implements store.Scheduler.
func (s *Store) PutSchedule(ctx context.Context, sc store.Schedule) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.lock()
	defer s.unlock()
	if old := s.schedules[sc.ScheduleRef]; old != nil && old.Declared {
		return fmt.Errorf("schedule %q: %w", sc.Name, store.ErrScheduleDeclared)
	}
	sc.Declared = false
	s.putLocked(sc, s.now())
	return nil
}

// ListSchedules implements store.Scheduler.
func (s *Store) ListSchedules(ctx context.Context, workflow, tenant string) ([]store.Schedule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	var out []store.Schedule
	for ref, sc := range s.schedules {
		if (workflow == "" || ref.Workflow == workflow) && (tenant == "" || ref.Tenant == tenant) {
			out = append(out, copyOf(sc))
		}
	}
	slices.SortFunc(out, func(a, b store.Schedule) int { return compareRefs(a.ScheduleRef, b.ScheduleRef) })
	return out, nil
}

// copyOf returns a copy of a stored schedule that shares no memory with it.
func copyOf(sc *store.Schedule) store.Schedule {
	c := *sc
	c.Input = slices.Clone(sc.Input)
	return c
}

func compareRefs(a, b store.ScheduleRef) int {
	return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Name, b.Name))
}

// PauseSchedule implements store.Scheduler.
func (s *Store) PauseSchedule(ctx context.Context, ref store.ScheduleRef, paused bool, next time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.lock()
	defer s.unlock()
	sc := s.schedules[ref]
	if sc == nil {
		return fmt.Errorf("schedule %s: %w", ref, store.ErrScheduleNotFound)
	}
	if !paused && sc.Paused {
		sc.NextAt = next
	}
	sc.Paused, sc.UpdatedAt = paused, s.now()
	return nil
}

// DeleteSchedule implements store.Scheduler.
func (s *Store) DeleteSchedule(ctx context.Context, ref store.ScheduleRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.lock()
	defer s.unlock()
	if s.schedules[ref] == nil {
		return fmt.Errorf("schedule %s: %w", ref, store.ErrScheduleNotFound)
	}
	delete(s.schedules, ref)
	return nil
}

// DueSchedules implements store.Scheduler.
func (s *Store) DueSchedules(ctx context.Context, workflows []string, limit int) ([]store.Schedule, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	s.lock()
	defer s.unlock()
	now := s.now()
	var due []store.Schedule
	for ref, sc := range s.schedules {
		if !sc.Paused && !sc.NextAt.After(now) && slices.Contains(workflows, ref.Workflow) {
			due = append(due, copyOf(sc))
		}
	}
	slices.SortFunc(due, func(a, b store.Schedule) int {
		return cmp.Or(a.NextAt.Compare(b.NextAt), compareRefs(a.ScheduleRef, b.ScheduleRef))
	})
	if len(due) > limit {
		due = due[:max(limit, 0)]
	}
	return due, now, nil
}

// FireSchedule implements store.Scheduler.
func (s *Store) FireSchedule(ctx context.Context, f store.ScheduleFiring) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	shapes, err := s.prepare(f.Runs)
	if err != nil {
		return false, err
	}
	s.lock()
	defer s.unlock()
	sc := s.schedules[f.ScheduleRef]
	if sc == nil || sc.Paused || !sc.NextAt.Equal(f.Due) {
		return false, nil
	}
	now := s.now()
	if _, err := s.createLocked(f.Runs, shapes, store.ClaimParams{}, now); err != nil {
		return false, err
	}
	sc.NextAt, sc.UpdatedAt = f.Next, now
	if n := len(f.Runs); n > 0 {
		sc.LastAt = f.Last
		sc.LastRun = f.Runs[n-1].ID
		if !f.Runs[n-1].Existing.IsZero() {
			sc.LastRun = f.Runs[n-1].Existing
		}
	}
	return true, nil
}
