package store

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Fleet, part of [Admin], shows operators the workers that share a store
// and the work waiting for those workers: the engine's hot path never uses
// it.
type Fleet interface {
	// Workers returns the workers with a record (alive or not yet
	// retired), by id.
	Workers(ctx context.Context) ([]WorkerInfo, error)

	// Backlog counts the unfinished tasks of RUNNING runs that are queued,
	// running, sleeping or waiting out a retry delay, per tenant and
	// workflow, sorted by tenant then workflow. Tenants and workflows with
	// none are left out.
	Backlog(ctx context.Context) ([]BacklogEntry, error)

	// QueuePlaces says where the run's named steps stand in the fair
	// queue: for each that is queued, the tasks handed out before it, or
	// the rate limit it waits for first.
	// Steps that are not queued are left out of the map; so are all of
	// them when the run does not exist.
	QueuePlaces(ctx context.Context, run dag.RunID, steps []string) (map[string]QueuePlace, error)
}

// MaxQueueAhead bounds the counts of a QueuePlace, so that reading the
// place of a task behind a deep queue costs a bounded scan.
const MaxQueueAhead = 10_000

// QueuePlace is where a queued task stands in the fair queue.
type QueuePlace struct {
	// Ahead counts the queued tasks, of every tenant and workflow, that
	// the fair queue hands out before this one, up to MaxQueueAhead.
	Ahead int
	// TenantAhead counts those of the task's own tenant.
	TenantAhead int
	// RateLimited, when set, says that the task is not in the fair queue
	// yet: it waits for a rate limit's tokens ("rate limit stripe (key
	// acct_42): next token in …"), and the counts are zero.
	RateLimited string
}

// WorkerInfo is a worker as operators see it.
type WorkerInfo struct {
	ID          string
	HeartbeatAt time.Time // its last heartbeat
	AliveUntil  time.Time // when its tasks become others' to rescue
	Alive       bool      // AliveUntil is ahead of the store's now
	// Leader is set for the alive worker that does the housekeeping: the
	// one that took the leader lock last (see LeaderNamer), or, in a store
	// that elects no leader, every alive worker.
	Leader bool
	// Signatures are the task signatures it serves, and Concurrency how
	// many steps it runs at once (see Deploys.Serve); zero when it did not
	// say.
	Signatures  []string
	Concurrency int
}

// BacklogEntry counts one tenant's unfinished tasks of one workflow.
type BacklogEntry struct {
	Tenant   string
	Workflow string
	Queued   int // in the ready queue
	Running  int // claimed by a worker
	Sleeping int // a sleep step waiting for its timer
	Backoff  int // waiting out a retry delay
	// OldestQueued is how long the oldest of the Queued tasks has been in
	// the ready queue, on the store's clock (0 when none is).
	OldestQueued time.Duration
}

// LeaderNamer, part of [Elector], records which worker took the lead, for
// [Fleet.Workers]. The engine names itself when it becomes the leader.
type LeaderNamer interface {
	NameLeader(ctx context.Context, worker string) error
}
