package store

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Operator, part of [Admin], is what operators use to see and act on runs:
// list and count them, read one with its tasks and events (GetRun,
// ListTasks, ListEvents of [Execution]), and cancel many at once. It is
// apart from the workers' hot path: a store's operator queries may read
// more than a worker's would.
//
// Run ids are UUIDv7: their order is their creation order, so lists are
// newest first by id, and a page's cursor is the id of its last run
// (keyset pagination: a page is stable under inserts).
type Operator interface {
	// ListRuns returns up to f.Limit runs matching f, newest first,
	// starting after f.After (the Next of the previous page; zero for the
	// first page).
	ListRuns(ctx context.Context, f RunFilter) (RunPage, error)

	// CountRuns counts the runs matching f (f.After and f.Limit are
	// ignored) by status.
	CountRuns(ctx context.Context, f RunFilter) (map[RunStatus]int, error)

	// CancelRuns cancels up to limit RUNNING runs matching f (whatever
	// f.Statuses says), oldest first, as CancelRun does each, in batches
	// that each hold their runs' locks briefly. It returns how many it
	// cancelled; call it again for more.
	CancelRuns(ctx context.Context, f RunFilter, limit int) (int, error)

	// ListChildren returns the runs that tasks of run id started as their
	// children (KindChild), oldest first. An unknown id is an error
	// wrapping [ErrRunNotFound]; a run without children has none.
	ListChildren(ctx context.Context, id dag.RunID) ([]ChildRun, error)
}

// RunFilter selects runs. Zero fields match every run.
type RunFilter struct {
	Workflow string
	Tenant   string
	Statuses []RunStatus // any of these
	// Created in [CreatedFrom, CreatedTo): by the run's CreatedAt (the
	// store's clock when it was created); a zero bound is open.
	CreatedFrom, CreatedTo time.Time
	// Children selects runs by whether a parent task started them.
	Children ChildFilter
	// After is the cursor: runs older than this id (the previous page's
	// Next). Zero starts at the newest.
	After dag.RunID
	// Limit bounds a page; 0 means DefaultPageSize, and more than
	// MaxPageSize is MaxPageSize.
	Limit int
}

// Page sizes of [Operator.ListRuns].
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// RunPage is one page of runs, newest first.
type RunPage struct {
	Runs []RunSummary
	// Next is the cursor of the next page (RunFilter.After), or zero
	// when this page is the last.
	Next dag.RunID
}

// RunSummary is a run as lists show it: without its input or tasks.
type RunSummary struct {
	ID         dag.RunID
	Workflow   string
	Tenant     string
	Status     RunStatus
	CreatedAt  time.Time
	FinishedAt time.Time    // zero while RUNNING
	Failure    *dag.Failure // set when FAILED
}
