// Package housekeeping is a worker's keeper: it heartbeats, so the store
// knows the worker is alive and which runs it holds, and while the worker
// leads (store.Elector, or always over a store without one) it rescues the
// tasks of lost workers, reports tasks no live worker serves, and prunes
// finished runs. Once the worker stops it gives up leadership and does no
// more housekeeping, but keeps heartbeating: the steps still draining keep
// their tasks until the worker retires.
package housekeeping

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine/internal/outage"
	"github.com/dagenhq/dagen/runtime/store"
)

const (
	// pruneBatch is how many runs one call of PruneRuns deletes one by one
	// (a store may drop more at once), and pruneBatches how many calls a
	// round of pruning makes at most while each deletes a whole batch.
	pruneBatch   = 1000
	pruneBatches = 10
)

// Config is what a Keeper works with.
type Config struct {
	Store   store.Store
	Elector store.Elector // nil: every worker leads
	Worker  string
	// Interval is the heartbeat's; Lease what a heartbeat keeps the
	// worker alive for; Retention how long finished runs are kept
	// (negative: forever); Batch how many tasks a rescue or a report
	// takes at once.
	Interval, Lease, Retention time.Duration
	Batch                      int
	Log                        *slog.Logger
	Health                     *outage.Health
	// Leading is set while the worker leads housekeeping.
	Leading *atomic.Bool

	// Held returns the attempts the worker holds: a heartbeat names them,
	// so the store can tell an attempt the worker holds from one it does
	// not (its claim never reached the worker, or the store lost the
	// result of an attempt the worker finished).
	Held func() []store.HeldAttempt
	// Cancelled stops the steps running here of runs cancelled elsewhere.
	Cancelled func(ids []dag.RunID)
	// Publish tells the store what the worker serves, before each
	// heartbeat.
	Publish func(ctx context.Context)
	// Rescued is told that rescued tasks were queued again.
	Rescued func()
}

// Keeper heartbeats a worker and does its housekeeping while it leads.
type Keeper struct{ cfg Config }

// New returns a keeper.
func New(cfg Config) *Keeper { return &Keeper{cfg: cfg} }

// Run heartbeats every Interval and, while the worker leads, does the
// housekeeping, until ctx ends. When stopping closes, it gives up
// leadership, so that housekeeping does not wait for the drain, and only
// heartbeats.
func (k *Keeper) Run(ctx context.Context, stopping <-chan struct{}) {
	c := k.cfg
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	defer c.Leading.Store(false)
	var lastPrune, renewed time.Time
	standBack := false
	stopped := false
	// While the store fails, beats back off (up to the default interval,
	// a third of the lease) unless another loop finds it back first.
	retry := outage.Backoff{Min: c.Interval, Max: max(c.Interval, c.Lease/3)}
	var retryAt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-stopping:
			// Let another worker take over housekeeping during the drain.
			stopping, stopped = nil, true
			k.resign(ctx)
			continue
		case <-t.C:
		}
		if c.Health.IsFailing() && time.Now().Before(retryAt) {
			continue
		}
		if !k.Beat(ctx) {
			retryAt = time.Now().Add(retry.Next())
			// A leader that cannot renew its lease for a whole lease has
			// lost it to whoever could: it says so, rather than report a
			// lead another worker holds.
			if c.Leading.Load() && time.Since(renewed) >= c.Lease && c.Leading.CompareAndSwap(true, false) {
				c.Log.Warn("dagen: lost leadership: the store did not answer for a lease", "worker", c.Worker, "lease", c.Lease)
				standBack = true
			}
			continue // the store does not answer: housekeeping can wait for the next beat
		}
		retry.Reset()
		if stopped {
			continue
		}
		if standBack {
			// Leadership was just lost: let another worker take it first.
			standBack = false
			continue
		}
		leading := k.lead(ctx)
		if leading {
			renewed = time.Now()
		}
		if leading && !c.Leading.Load() {
			// Named before Leading reports it, so that whoever sees this
			// worker lead finds it named in the workers' view.
			if c.Elector != nil {
				if err := c.Elector.NameLeader(ctx, c.Worker); err != nil && ctx.Err() == nil {
					c.Health.Failed("name the leader", err)
				}
			}
		}
		if was := c.Leading.Swap(leading); was && !leading {
			c.Log.Warn("dagen: lost leadership", "worker", c.Worker)
			standBack = true
		} else if !was && leading {
			c.Log.Info("dagen: leading housekeeping", "worker", c.Worker)
		}
		if !leading {
			continue
		}
		k.rescue(ctx)
		k.reportUnserved(ctx)
		if time.Since(lastPrune) >= k.pruneEvery() {
			lastPrune = time.Now()
			k.prune(ctx)
		}
	}
}

// Beat proves the worker alive, with the signatures it serves, and stops
// the steps of runs that were cancelled elsewhere. It reports false when
// the store failed.
func (k *Keeper) Beat(ctx context.Context) bool {
	c := k.cfg
	c.Publish(ctx)
	cancelled, err := c.Store.Heartbeat(ctx, c.Worker, c.Lease, c.Held())
	if err != nil {
		if ctx.Err() == nil {
			c.Health.Failed("heartbeat", err)
		}
		return false
	}
	c.Health.Succeeded()
	if len(cancelled) > 0 {
		c.Cancelled(cancelled)
	}
	return true
}

// resign gives up leadership when the worker begins to stop.
func (k *Keeper) resign(ctx context.Context) {
	c := k.cfg
	if !c.Leading.Swap(false) || c.Elector == nil {
		return
	}
	if err := c.Elector.Resign(ctx); err != nil && ctx.Err() == nil {
		c.Log.Error("dagen: resign leadership failed", "worker", c.Worker, "err", err)
		return
	}
	c.Log.Info("dagen: stopping: left housekeeping to other workers", "worker", c.Worker)
}

// lead reports whether this worker should do housekeeping: always over a
// store that elects no leader.
func (k *Keeper) lead(ctx context.Context) bool {
	c := k.cfg
	if c.Elector == nil {
		return true
	}
	leading, err := c.Elector.Lead(ctx, c.Lease)
	if err != nil {
		if ctx.Err() == nil {
			c.Health.Failed("leader election", err)
		}
		return false
	}
	return leading
}

// rescue queues again, or fails, the tasks of workers whose leases
// expired, a batch at a time while batches come back full.
func (k *Keeper) rescue(ctx context.Context) {
	c := k.cfg
	for {
		n, err := c.Store.RescueExpired(ctx, c.Batch)
		if errors.Is(err, store.ErrNotLeader) {
			return // the next beat's Lead says so
		}
		if err != nil {
			if ctx.Err() == nil {
				c.Health.Failed("rescue expired tasks", err)
			}
			return
		}
		if n > 0 {
			c.Log.Info("dagen: rescued tasks of lost workers", "worker", c.Worker, "tasks", n)
			c.Rescued()
		}
		if n < c.Batch {
			return
		}
	}
}

// WaitingGrace is how long a queued task may wait for a worker before the
// leader reports it: a worker that serves it may have just started.
func WaitingGrace(interval time.Duration) time.Duration { return 2 * interval }

// reportUnserved logs a WAITING event for tasks no live worker serves.
func (k *Keeper) reportUnserved(ctx context.Context) {
	c := k.cfg
	n, err := c.Store.ReportUnserved(ctx, WaitingGrace(c.Interval), c.Batch)
	if err != nil {
		if ctx.Err() == nil {
			c.Health.Failed("report tasks no worker serves", err)
		}
		return
	}
	if n > 0 {
		c.Log.Warn("dagen: tasks wait for a worker that serves their signature; deploy code that has them, or see dagen check -db",
			"worker", c.Worker, "tasks", n)
	}
}

// pruneEvery is how often the leader prunes: a quarter of the retention,
// between a heartbeat and a minute, so that finished runs go soon after
// their retention ends and a store's partitions are made well ahead.
func (k *Keeper) pruneEvery() time.Duration {
	every := time.Minute
	if k.cfg.Retention > 0 {
		every = min(every, k.cfg.Retention/4)
	}
	return max(every, k.cfg.Interval)
}

// prune deletes the runs that finished longer ago than the retention, in
// batches, until a batch comes back short or pruneBatches were deleted.
// With runs kept forever (a negative Retention) it deletes none, but still
// calls the store, which keeps what it makes ahead (pgstore's partitions).
func (k *Keeper) prune(ctx context.Context) {
	c := k.cfg
	cutoff, limit := time.Now().Add(-c.Retention), pruneBatch
	if c.Retention < 0 {
		cutoff, limit = time.Unix(0, 0), 0
	}
	for range pruneBatches {
		n, err := c.Store.PruneRuns(ctx, cutoff, limit)
		if errors.Is(err, store.ErrNotLeader) {
			return // the next beat's Lead says so
		}
		if err != nil {
			if ctx.Err() == nil {
				c.Health.Failed("prune finished runs", err)
			}
			return
		}
		if limit == 0 || n < limit {
			return
		}
	}
}
