package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Catchup says which slots of a schedule fire when several came due while
// nothing fired them (every worker was down, or busy).
type Catchup string

// Catch-up policies.
const (
	// CatchupLatest fires the latest due slot only: one run.
	CatchupLatest Catchup = "latest"
	// CatchupAll fires every due slot, oldest first, up to MaxCatchup of
	// the latest.
	CatchupAll Catchup = "all"
	// CatchupNone fires a due slot only when it is not late by more than
	// ScheduleGrace and no later slot is due; missed slots start nothing.
	CatchupNone Catchup = "none"
)

// MaxCatchup bounds how many missed slots one firing of a CatchupAll
// schedule starts runs for: the latest ones.
const MaxCatchup = 100

// ScheduleGrace is how late a CatchupNone schedule's slot may fire.
const ScheduleGrace = time.Minute

// ValidCatchup reports whether c is a catch-up policy.
func ValidCatchup(c Catchup) bool {
	return c == CatchupLatest || c == CatchupAll || c == CatchupNone
}

// ScheduleRef names a schedule: its workflow, tenant and name.
type ScheduleRef struct {
	Workflow string
	Tenant   string
	Name     string
}

// String names the schedule in messages: "nightly" of "Report" for "acme".
func (r ScheduleRef) String() string {
	return fmt.Sprintf("%q of %q for %q", r.Name, r.Workflow, r.Tenant)
}

// Schedule is a stored schedule: runs of Workflow for Tenant at the slots
// of a cron expression.
type Schedule struct {
	ScheduleRef
	Cron    string  // a five-field cron expression, or a descriptor such as @daily
	Zone    string  // the IANA zone the expression is read in; empty is UTC
	Catchup Catchup // which missed slots fire
	// Input is the encoded input of every run, for a schedule created at
	// run time; nil for a declared one (//dag:schedule), whose func builds
	// the input from the slot's time.
	Input    []byte
	Declared bool // from a //dag:schedule directive
	Paused   bool
	// NextAt is the next slot to fire. LastAt is the last slot fired, and
	// LastRun its run, or zero.
	NextAt    time.Time
	LastAt    time.Time
	LastRun   dag.RunID
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ScheduleFiring fires a due schedule: in one unit, it checks that the
// schedule is still due at Due (no other worker fired it since), creates
// Runs as CreateRuns does (each keyed by its slot), and moves the schedule
// to Next, recording Last and the run of the latest slot.
type ScheduleFiring struct {
	ScheduleRef
	Due  time.Time // the NextAt the caller read
	Next time.Time // the first slot after the store's now
	Last time.Time // the latest slot fired, or zero when none fires
	Runs []NewRun
}

// Scheduler, part of [Triggers], keeps schedules. Schedules are fired by
// any worker serving their workflow; FireSchedule makes each slot
// fire once, and each slot's run carries the idempotency key
// [ScheduleKey], so no two workers, failover or skewed clock start a slot
// twice.
type Scheduler interface {
	// Now returns the store's clock, which schedules' slots are read on.
	Now(ctx context.Context) (time.Time, error)
	// RegisterSchedules makes the declared schedules of workflow these:
	// each is created (with its NextAt) or updated by name, keeping its
	// Paused, and its NextAt unless its Cron or Zone changed; declared
	// schedules of the workflow that are not in the list are deleted.
	RegisterSchedules(ctx context.Context, workflow string, declared []Schedule) error
	// PutSchedule creates a schedule, or replaces the one with its name
	// (keeping its Paused, and its NextAt unless Cron or Zone changed).
	// A declared schedule cannot be replaced: that is an error wrapping
	// [ErrScheduleDeclared].
	PutSchedule(ctx context.Context, s Schedule) error
	// ListSchedules returns the schedules of workflow (all when empty)
	// and tenant (all when empty), by workflow, tenant and name.
	ListSchedules(ctx context.Context, workflow, tenant string) ([]Schedule, error)
	// PauseSchedule pauses a schedule (paused) or resumes it, due next at
	// next: slots that came due while it was paused do not fire. An
	// unknown schedule is an error wrapping [ErrScheduleNotFound].
	PauseSchedule(ctx context.Context, ref ScheduleRef, paused bool, next time.Time) error
	// DeleteSchedule deletes a schedule; an unknown one is an error
	// wrapping [ErrScheduleNotFound].
	DeleteSchedule(ctx context.Context, ref ScheduleRef) error
	// DueSchedules returns up to limit schedules of these workflows that
	// are not paused and due (NextAt at or before now), earliest first,
	// with the store's now.
	DueSchedules(ctx context.Context, workflows []string, limit int) ([]Schedule, time.Time, error)
	// FireSchedule fires a due schedule (see ScheduleFiring) and reports
	// whether it did: false when the schedule is gone, paused, no longer
	// due at f.Due, or being fired by another worker right now.
	FireSchedule(ctx context.Context, f ScheduleFiring) (bool, error)
}

// ScheduleKey is the idempotency key of a schedule slot's run:
// "schedule:<name>:<slot in UTC, RFC 3339>".
func ScheduleKey(name string, slot time.Time) string {
	return "schedule:" + name + ":" + slot.UTC().Format(time.RFC3339)
}

// Errors of schedules.
var (
	ErrScheduleNotFound = errors.New("schedule not found")
	ErrScheduleDeclared = errors.New("schedule is declared by a //dag:schedule directive: change it in the code")
)
