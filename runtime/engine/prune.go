package engine

import (
	"context"
	"time"
)

const (
	// pruneBatch is how many runs one call of PruneRuns deletes one by one
	// (a store may drop more at once), and pruneBatches how many calls a
	// round of pruning makes at most while each deletes a whole batch.
	pruneBatch   = 1000
	pruneBatches = 10
)

// pruneEvery is how often the leader prunes: a quarter of the retention,
// between a heartbeat and a minute, so that finished runs go soon after
// their retention ends and a store's partitions are made well ahead.
func (e *Engine) pruneEvery() time.Duration {
	every := time.Minute
	if e.cfg.Retention > 0 {
		every = min(every, e.cfg.Retention/4)
	}
	return max(every, e.cfg.HeartbeatInterval)
}

// prune deletes the runs that finished longer ago than the retention, in
// batches, until a batch comes back short or pruneBatches were deleted.
// With runs kept forever (a negative Retention) it deletes none, but still
// calls the store, which keeps what it makes ahead (pgstore's partitions).
func (e *Engine) prune(ctx context.Context) {
	cutoff, limit := time.Now().Add(-e.cfg.Retention), pruneBatch
	if e.cfg.Retention < 0 {
		cutoff, limit = time.Unix(0, 0), 0
	}
	for range pruneBatches {
		n, err := e.store.PruneRuns(ctx, cutoff, limit)
		if err != nil {
			if ctx.Err() == nil {
				e.health.failed("prune finished runs", err)
			}
			return
		}
		if limit == 0 || n < limit {
			return
		}
	}
}
