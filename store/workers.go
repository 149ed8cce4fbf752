package store

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/dag"
)

// Workers is implemented by stores that many worker processes share. A
// worker proves it is alive with one narrow heartbeat row; while it is
// alive the store does not rescue its RUNNING tasks, even past their claim
// lease, so long steps need no per-task lease renewal.
type Workers interface {
	// Heartbeat records that worker is alive until the store's now plus
	// ttl. runs are the runs with steps executing on the worker; Heartbeat
	// returns those of them that were cancelled, so the worker can cancel
	// the steps' contexts.
	Heartbeat(ctx context.Context, worker string, ttl time.Duration, runs []dag.RunID) (cancelled []dag.RunID, err error)

	// RetireWorker removes worker's heartbeat. With release, its RUNNING
	// tasks are rescued at once (re-enqueued with a new attempt, or failed
	// when they have none left) instead of when their lease ends. It
	// returns how many tasks it released.
	RetireWorker(ctx context.Context, worker string, release bool) (int, error)

	// PruneRuns deletes up to limit runs that finished before cutoff, with
	// their tasks, events and timers. It returns how many it deleted.
	PruneRuns(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// Elector is implemented by stores that elect one leader among the worker
// processes sharing them. Only the leader does housekeeping (rescuing
// expired tasks, pruning history); claiming and timers need no leader. A
// store that does not implement Elector makes every worker a leader.
type Elector interface {
	// Lead tries to become, or checks that this store still is, the
	// leader. It is cheap to call often.
	Lead(ctx context.Context) (bool, error)
	// Resign gives up leadership, if held.
	Resign(ctx context.Context) error
}

// Notifier is implemented by stores that can tell idle workers that work
// was enqueued. Notifications are hints: polling stays the truth, and a
// worker must not rely on seeing every one.
type Notifier interface {
	// Subscribe returns a channel that receives a value when work may be
	// ready. The subscription ends, and the channel is no longer written,
	// when ctx is done.
	Subscribe(ctx context.Context) (<-chan struct{}, error)
}
