package maintenance

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Vacuum vacuums the queue tables, whose rows come and go with the work:
// by volume, every churnVacuumEvery tasks enqueued (Note), in the
// background, and on the leader's rounds where the server's autovacuum is
// off (Queues).
type Vacuum struct {
	pool  *pgxpool.Pool
	churn countedJob   // the vacuum by volume: see Note
	last  atomic.Int64 // when, in unix nanoseconds, Queues last vacuumed
}

// NewVacuum returns the vacuum of the queue tables of pool's schema.
func NewVacuum(pool *pgxpool.Pool) *Vacuum {
	v := &Vacuum{pool: pool}
	v.churn.every = churnVacuumEvery
	return v
}

// Wait waits for the vacuum under way in the background, if any.
func (v *Vacuum) Wait() { v.churn.wait() }

// vacuumEvery is how often, at most, the leader vacuums the queue tables
// (PruneRuns may be called several times a round).
const vacuumEvery = 10 * time.Second

// queueTables are the tables whose rows come and go with the work rather
// than with the runs: every step inserts and deletes a queue entry, and
// every claim a lease, so at thousands of steps a second they leave as
// many dead rows.
// The history tables are left out: their ranges are dropped whole.
var queueTables = []string{
	"dagen_ready", "dagen_leases", "dagen_queue_frontier", "dagen_timers", "dagen_run_queue",
	"dagen_slots", "dagen_run_keys", "dagen_tenant_groups", "dagen_workers", "dagen_leader",
}

// churnTables are the queue tables that every step or claim writes twice
// (an insert and a delete): the ready queue and the leases. They are vacuumed
// by volume (see churnVacuumEvery), whatever the server's autovacuum does.
var churnTables = []string{"dagen_ready", "dagen_leases"}

// churnVacuumEvery is how many tasks a store enqueues between two vacuums
// of churnTables.
//
// A claim takes the queue's first rows in id order, and ids only grow, so
// its index scan starts at the deleted entries of every task claimed since
// the last vacuum: a recently deleted row's entry is passed only after a
// visit to the heap. Autovacuum looks at a table once a minute at best (and
// never where it is off), and under load even the leader's vacuum, on a
// timer, let a claim and an enqueue's look for an empty queue read page
// after page of dead entries, until claims fell behind the work.
// A vacuum every 20,000 tasks keeps both to a few dozen pages for the cost
// of a vacuum of a table that holds the tasks of the moment (see
// docs/performance.md, "Vacuuming the queue tables by volume").
const churnVacuumEvery = 20000

// vacuumOptions are the options of every vacuum of a queue table. They
// are never truncated: a truncation locks the table ACCESS EXCLUSIVE and
// scans its end backwards, which makes the engine's statements wait (see
// docs/performance.md, "Vacuuming the queue tables by volume"), for pages
// the next thousand enqueues fill again.
const vacuumOptions = "(SKIP_LOCKED, TRUNCATE false)"

// Note records that n tasks went into the queue and, every
// churnVacuumEvery of them, vacuums churnTables in the background (see
// countedJob).
func (v *Vacuum) Note(ctx context.Context, n int) {
	v.churn.note(ctx, n, func(ctx context.Context) error { return v.within(ctx, churnTables) })
}

// within vacuums tables, within refreshTimeout.
func (v *Vacuum) within(ctx context.Context, tables []string) error {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	// VACUUM cannot run in a transaction: one statement, on the simple
	// protocol (no arguments).
	if _, err := v.pool.Exec(ctx, "VACUUM "+vacuumOptions+" "+strings.Join(tables, ", ")); err != nil {
		return fmt.Errorf("vacuum %s: %w", strings.Join(tables, ", "), err)
	}
	return nil
}

// Queues vacuums the queue tables when the server's autovacuum is off, as
// the leader's part of pruning, at most every vacuumEvery. Autovacuum keeps them small where
// it runs; where it is off (some test and CI servers turn it off) nothing
// else would, and a queue table that only grows makes every claim read
// more dead rows. Tables another session holds (SKIP_LOCKED) wait for the
// next round.
func (v *Vacuum) Queues(ctx context.Context) error {
	now := time.Now().UnixNano()
	if last := v.last.Load(); now-last < int64(vacuumEvery) || !v.last.CompareAndSwap(last, now) {
		return nil
	}
	var on bool
	if err := v.pool.QueryRow(ctx, "SELECT current_setting('autovacuum')::boolean").Scan(&on); err != nil {
		return fmt.Errorf("read the autovacuum setting: %w", err)
	}
	if on {
		return nil
	}
	if err := v.within(ctx, queueTables); err != nil {
		return fmt.Errorf("the queue tables (autovacuum is off): %w", err)
	}
	return nil
}
