package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dagenhq/dagen/runtime/cronexpr"
	"github.com/dagenhq/dagen/runtime/engine/internal/tracing"
	"github.com/dagenhq/dagen/runtime/store"
)

// DefaultScheduleTenant is the tenant of a declared schedule's runs when
// its directive names none.
const DefaultScheduleTenant = "schedule"

// ScheduleDef is a declared schedule (//dag:schedule): runs of the
// workflow at the slots of Cron, read in Zone, each with the input Input
// builds from the slot's time.
type ScheduleDef struct {
	// Name is the stored name, unique in the workflow; it is part of each
	// slot's idempotency key (store.ScheduleKey).
	Name    string
	Cron    string        // see package cronexpr
	Zone    string        // an IANA zone name; empty is UTC
	Tenant  string        // the runs' tenant; empty is DefaultScheduleTenant
	Catchup store.Catchup // empty is store.CatchupLatest
	// Input builds the encoded input of the run for a slot.
	Input func(ctx context.Context, slot time.Time) ([]byte, error)
}

// ScheduleSpec is a schedule created at run time (Engine.CreateSchedule):
// runs of a workflow for Tenant at the slots of Cron, read in Zone, each
// with Input.
type ScheduleSpec struct {
	Name    string // unique among the workflow's schedules of the tenant
	Tenant  string
	Cron    string        // see package cronexpr
	Zone    string        // an IANA zone name; empty is UTC
	Catchup store.Catchup // empty is store.CatchupLatest
	Input   any           // the workflow input of every run
}

// validSchedules checks declared schedules: names, expressions, zones,
// tenants and catch-up policies.
func validSchedules(defs []ScheduleDef, bad func(format string, args ...any)) {
	seen := map[string]bool{}
	for _, s := range defs {
		if seen[s.Name] {
			bad("duplicate schedule %q", s.Name)
		}
		seen[s.Name] = true
		if err := checkSchedule(s.Name, cmp.Or(s.Tenant, DefaultScheduleTenant), s.Cron, s.Zone, s.Catchup); err != nil {
			bad("schedule %q: %v", s.Name, err)
		}
		if s.Input == nil {
			bad("schedule %q has no Input func", s.Name)
		}
	}
}

// checkSchedule checks what declared and created schedules have in
// common: a name that fits in a slot's key, the runs' tenant, the cron
// expression in its zone, and the catch-up policy (empty is latest).
func checkSchedule(name, tenant, cron, zone string, catchup store.Catchup) error {
	if name == "" {
		return errors.New("a schedule needs a name")
	}
	if err := store.ValidKey(store.ScheduleKey(name, time.Time{})); err != nil {
		return fmt.Errorf("name too long: %w", err)
	}
	if err := store.ValidTenant(tenant); err != nil {
		return err
	}
	if catchup != "" && !store.ValidCatchup(catchup) {
		return fmt.Errorf("catchup %q: want latest, all or none", catchup)
	}
	_, err := cronexpr.Parse(cron, zone)
	return err
}

// CreateSchedule creates a schedule of workflow, or replaces the one of
// the same tenant and name (keeping whether it is paused, and its next
// slot unless the expression or zone changed). A new schedule starts at
// its next slot. The workflow must be registered on this engine, and is
// fired by workers that serve it.
func (e *Engine) CreateSchedule(ctx context.Context, workflow string, spec ScheduleSpec) error {
	fail := func(err error) error { return fmt.Errorf("create schedule %q of %q: %w", spec.Name, workflow, err) }
	reg := e.lookup(workflow)
	if reg == nil {
		return fail(ErrUnknownWorkflow)
	}
	if err := checkSchedule(spec.Name, spec.Tenant, spec.Cron, spec.Zone, spec.Catchup); err != nil {
		return fail(err)
	}
	spec.Catchup = cmp.Or(spec.Catchup, store.CatchupLatest)
	cs, err := cronexpr.Parse(spec.Cron, spec.Zone)
	if err != nil {
		return fail(err)
	}
	in, err := e.encodePayload("the schedule's input", spec.Input)
	if err != nil {
		return fail(err)
	}
	if _, err := newRun(reg, spec.Tenant, in, TriggerRequest{}); err != nil {
		return fail(err) // its key or concurrency key does not derive
	}
	now, err := e.store.Now(ctx)
	if err != nil {
		return fail(err)
	}
	err = e.store.PutSchedule(ctx, store.Schedule{
		ScheduleRef: store.ScheduleRef{Workflow: workflow, Tenant: spec.Tenant, Name: spec.Name},
		Cron:        spec.Cron, Zone: spec.Zone, Catchup: spec.Catchup, Input: in,
		NextAt: cs.Next(now),
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// Schedules lists the schedules of workflow and tenant (all of either when
// empty), declared and created ones, by workflow, tenant and name.
func (e *Engine) Schedules(ctx context.Context, workflow, tenant string) ([]store.Schedule, error) {
	return e.store.ListSchedules(ctx, workflow, tenant)
}

// PauseSchedule pauses a schedule: no slot fires until it is resumed.
func (e *Engine) PauseSchedule(ctx context.Context, ref store.ScheduleRef) error {
	if err := e.store.PauseSchedule(ctx, ref, true, time.Time{}); err != nil {
		return fmt.Errorf("pause schedule %q: %w", ref.Name, err)
	}
	return nil
}

// ResumeSchedule resumes a paused schedule at its next slot: the slots
// that came due while it was paused do not fire.
func (e *Engine) ResumeSchedule(ctx context.Context, ref store.ScheduleRef) error {
	return ResumeScheduleIn(ctx, e.store, ref)
}

// ResumeScheduleIn resumes a paused schedule of sc at its next slot, as
// Engine.ResumeSchedule does, without an engine (for tools such as the
// dagen command).
func ResumeScheduleIn(ctx context.Context, sc store.Scheduler, ref store.ScheduleRef) error {
	next, err := nextSlot(ctx, sc, ref)
	if err == nil {
		err = sc.PauseSchedule(ctx, ref, false, next)
	}
	if err != nil {
		return fmt.Errorf("resume schedule %q: %w", ref.Name, err)
	}
	return nil
}

// nextSlot returns the first slot of a stored schedule after the store's
// now.
func nextSlot(ctx context.Context, sc store.Scheduler, ref store.ScheduleRef) (time.Time, error) {
	all, err := sc.ListSchedules(ctx, ref.Workflow, ref.Tenant)
	if err != nil {
		return time.Time{}, err
	}
	i := slices.IndexFunc(all, func(s store.Schedule) bool { return s.Name == ref.Name })
	if i < 0 {
		return time.Time{}, store.ErrScheduleNotFound
	}
	cs, err := cronexpr.Parse(all[i].Cron, all[i].Zone)
	if err != nil {
		return time.Time{}, err
	}
	now, err := sc.Now(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return cs.Next(now), nil
}

// DeleteSchedule deletes a schedule. A declared schedule comes back when
// its workflow is registered again: delete its directive instead.
func (e *Engine) DeleteSchedule(ctx context.Context, ref store.ScheduleRef) error {
	if err := e.store.DeleteSchedule(ctx, ref); err != nil {
		return fmt.Errorf("delete schedule %q: %w", ref.Name, err)
	}
	return nil
}

// registerSchedules puts the declared schedules of the registered
// definitions in the store, once per definition.
func (e *Engine) registerSchedules(ctx context.Context) error {
	e.mu.RLock()
	regs := make([]*registered, 0, len(e.defs))
	for _, r := range e.defs {
		if !r.scheduled.Load() {
			regs = append(regs, r)
		}
	}
	e.mu.RUnlock()
	if len(regs) == 0 {
		return nil
	}
	now, err := e.store.Now(ctx)
	if err != nil {
		return err
	}
	for _, r := range regs {
		declared := make([]store.Schedule, 0, len(r.def.Schedules))
		for _, d := range r.def.Schedules {
			cs, err := cronexpr.Parse(d.Cron, d.Zone)
			if err != nil {
				return err // Validate checked it
			}
			s := store.Schedule{
				ScheduleRef: store.ScheduleRef{Workflow: r.def.Name, Tenant: cmp.Or(d.Tenant, DefaultScheduleTenant), Name: d.Name},
				Cron:        d.Cron, Zone: d.Zone, Catchup: cmp.Or(d.Catchup, store.CatchupLatest), Declared: true,
				NextAt: cs.Next(now),
			}
			declared = append(declared, s)
		}
		if err := e.store.RegisterSchedules(ctx, r.def.Name, declared); err != nil {
			return fmt.Errorf("register the schedules of %q: %w", r.def.Name, err)
		}
		r.scheduled.Store(true)
	}
	return nil
}

// fireSchedules fires the due schedules of the registered workflows, up to
// limit of them, and returns how many slots started runs.
func (e *Engine) fireSchedules(ctx context.Context, limit int) (int, error) {
	if err := e.registerSchedules(ctx); err != nil {
		return 0, err
	}
	e.mu.RLock()
	workflows := make([]string, 0, len(e.defs))
	for name := range e.defs {
		workflows = append(workflows, name)
	}
	e.mu.RUnlock()
	if len(workflows) == 0 {
		return 0, nil
	}
	slices.Sort(workflows)
	due, now, err := e.store.DueSchedules(ctx, workflows, limit)
	if err != nil {
		return 0, err
	}
	started := 0
	var errs []error
	for _, s := range due {
		n, err := e.fireSchedule(ctx, s, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", s.ScheduleRef, err))
			continue
		}
		started += n
	}
	return started, errors.Join(errs...)
}

// fireSchedule fires one due schedule: it picks the slots its catch-up
// policy fires, builds their runs, and has the store start them and move
// the schedule on, unless another worker did first. A slot whose input
// cannot be built leaves the schedule due, to be tried again.
func (e *Engine) fireSchedule(ctx context.Context, s store.Schedule, now time.Time) (int, error) {
	reg := e.lookup(s.Workflow)
	if reg == nil {
		return 0, nil
	}
	var def *ScheduleDef
	if s.Declared {
		i := slices.IndexFunc(reg.def.Schedules, func(d ScheduleDef) bool { return d.Name == s.Name })
		if i < 0 {
			return 0, nil // declared by another build of the workflow: its workers fire it
		}
		def = &reg.def.Schedules[i]
	}
	cs, err := cronexpr.Parse(s.Cron, s.Zone)
	if err != nil {
		return 0, err
	}
	slots, next := cs.Due(s.NextAt, now, store.MaxCatchup)
	switch {
	case len(slots) == 0 || s.Catchup == store.CatchupAll:
	case s.Catchup == store.CatchupNone:
		slots = slots[len(slots)-1:]
		if now.Sub(slots[0]) > store.ScheduleGrace {
			slots = nil
		}
	default:
		slots = slots[len(slots)-1:]
	}
	runs := make([]store.NewRun, 0, len(slots))
	var traceParent string
	if len(slots) > 0 {
		sctx, span := e.tracer.Schedule(ctx, s.ScheduleRef)
		defer span.End()
		traceParent = tracing.TraceParent(sctx)
	}
	for _, slot := range slots {
		in := s.Input
		if def != nil {
			if in, err = def.Input(ctx, slot); err != nil {
				return 0, &slotError{fmt.Errorf("build the input of slot %s: %w", slot.Format(time.RFC3339), err)}
			}
		}
		if err := e.checkPayload("the run's input", in); err != nil {
			return 0, &slotError{fmt.Errorf("slot %s: %w", slot.Format(time.RFC3339), err)}
		}
		nr, err := newRun(reg, s.Tenant, in, TriggerRequest{Key: store.ScheduleKey(s.Name, slot)})
		if err != nil {
			return 0, &slotError{fmt.Errorf("slot %s: %w", slot.Format(time.RFC3339), err)}
		}
		nr.TraceParent = traceParent
		runs = append(runs, nr)
	}
	f := store.ScheduleFiring{ScheduleRef: s.ScheduleRef, Due: s.NextAt, Next: next, Runs: runs}
	if len(slots) > 0 {
		f.Last = slots[len(slots)-1]
		e.recordOnce(ctx, reg)
	}
	fired, err := e.store.FireSchedule(ctx, f)
	if err != nil || !fired {
		return 0, err
	}
	if len(runs) > 0 {
		e.meters.RunsStarted(reg.def.Name, len(runs))
		e.meters.ScheduleLag(reg.def.Name, now.Sub(s.NextAt))
		e.wakeLoop()
	}
	return len(runs), nil
}

// fireSchedulesLogged fires due schedules for a started worker's
// schedule loop. The schedules stay due when it fails: the next round
// tries again. A store outage is logged once; a slot whose run cannot be
// built (its func failed, its input does not make a valid run) is the
// code's fault, logged each round.
func (e *Engine) fireSchedulesLogged(ctx context.Context) {
	if _, err := e.fireSchedules(ctx, e.cfg.BatchSize); err != nil && ctx.Err() == nil {
		var se *slotError
		if errors.As(err, &se) {
			e.log.Error("dagen: a schedule's slot could not start its run; will try again", "worker", e.cfg.WorkerID, "err", err)
		} else {
			e.health.Failed("fire schedules", err)
		}
	}
}

// slotError is a slot whose run could not be built.
type slotError struct{ err error }

func (e *slotError) Error() string { return e.err.Error() }
func (e *slotError) Unwrap() error { return e.err }
