package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// vacuumEvery is how often, at most, the leader vacuums the queue tables
// (PruneRuns may be called several times a round).
const vacuumEvery = 10 * time.Second

// queueTables are the tables whose rows come and go with the work rather
// than with the runs: every step inserts and deletes a queue entry and a
// lease, so at thousands of steps a second they leave as many dead rows.
// The history tables are left out: their ranges are dropped whole.
var queueTables = []string{
	"dagen_ready", "dagen_leases", "dagen_queue_frontier", "dagen_timers", "dagen_run_queue",
	"dagen_slots", "dagen_run_keys", "dagen_tenant_groups", "dagen_workers", "dagen_leader",
}

// vacuumQueues vacuums the queue tables when the server's autovacuum is
// off, as the leader's part of pruning. Autovacuum keeps them small where
// it runs; where it is off (some test and CI servers turn it off) nothing
// else would, and a queue table that only grows makes every claim read
// more dead rows. Tables another session holds (SKIP_LOCKED) wait for the
// next round.
func (s *Store) vacuumQueues(ctx context.Context) error {
	now := time.Now().UnixNano()
	if last := s.lastVacuum.Load(); now-last < int64(vacuumEvery) || !s.lastVacuum.CompareAndSwap(last, now) {
		return nil
	}
	var on bool
	if err := s.pool.QueryRow(ctx, "SELECT current_setting('autovacuum')::boolean").Scan(&on); err != nil {
		return fmt.Errorf("read the autovacuum setting: %w", err)
	}
	if on {
		return nil
	}
	// VACUUM cannot run in a transaction: one statement, on the simple
	// protocol (no arguments).
	if _, err := s.pool.Exec(ctx, "VACUUM (SKIP_LOCKED) "+strings.Join(queueTables, ", ")); err != nil {
		return fmt.Errorf("vacuum the queue tables (autovacuum is off): %w", err)
	}
	return nil
}
