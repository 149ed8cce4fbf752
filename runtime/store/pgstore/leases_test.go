package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// lease is a row of dagen_leases.
type lease struct {
	id     int64
	worker string
	until  time.Time
	runs   []dag.RunID
	tasks  []string
	events []int64
}

func readLeases(t *testing.T, pool *pgxpool.Pool) []lease {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT id, worker, lease_until, run_ids, tasks, events FROM dagen_leases ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []lease
	for rows.Next() {
		var l lease
		var runs [][16]byte
		require.NoError(t, rows.Scan(&l.id, &l.worker, &l.until, &runs, &l.tasks, &l.events))
		for _, r := range runs {
			l.runs = append(l.runs, dag.RunID(r))
		}
		out = append(out, l)
	}
	require.NoError(t, rows.Err())
	return out
}

// leaseFixture is a store on a schema of its own, with a fake clock, and
// three single-step runs created.
type leaseFixture struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	s     *pgstore.Store
	clock *fakeClock
	runs  []store.NewRun
}

func newLeaseFixture(t *testing.T, runs int) *leaseFixture {
	t.Helper()
	f := &leaseFixture{ctx: context.Background(), clock: newFakeClock()}
	f.pool = pgtest.NewPool(t, 2)
	require.NoError(t, pgstore.Migrate(f.ctx, f.pool))
	var err error
	f.s, err = pgstore.New(f.ctx, f.pool, &pgstore.Config{Now: f.clock.Now})
	require.NoError(t, err)
	for range runs {
		f.runs = append(f.runs, newRun("w", "t", step("a")))
	}
	require.NoError(t, f.s.CreateRuns(f.ctx, f.runs))
	return f
}

func (f *leaseFixture) claim(t *testing.T, s *pgstore.Store, n int) []store.ClaimedTask {
	t.Helper()
	claimed, err := s.ClaimTasks(f.ctx, store.ClaimParams{Worker: "w", Limit: n, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, n)
	return claimed
}

func (f *leaseFixture) complete(t *testing.T, s *pgstore.Store, tasks ...store.ClaimedTask) {
	t.Helper()
	results := make([]store.TaskResult, len(tasks))
	for i, c := range tasks {
		results[i] = completed(c)
	}
	_, err := s.CompleteTasks(f.ctx, results)
	require.NoError(t, err)
}

func (f *leaseFixture) status(t *testing.T, id dag.RunID) store.TaskStatus {
	t.Helper()
	tasks, err := f.s.ListTasks(f.ctx, id)
	require.NoError(t, err)
	return tasks[0].Status
}

// TestClaimWritesOneLease: a claim of three tasks writes one lease that
// lists them, each with its attempt's STARTED event. It stays while any of
// them runs, and the transaction that ends leases after the last one's
// completion deletes it.
func TestClaimWritesOneLease(t *testing.T) {
	t.Parallel()
	f := newLeaseFixture(t, 4)
	claimed := f.claim(t, f.s, 3)
	ls := readLeases(t, f.pool)
	require.Len(t, ls, 1)
	l := ls[0]
	require.Equal(t, "w", l.worker)
	require.Equal(t, f.clock.Now().Add(time.Minute), l.until.UTC())
	require.Len(t, l.tasks, 3)
	entries := map[dag.RunID]int64{}
	for i := range l.runs {
		require.Equal(t, "a", l.tasks[i])
		entries[l.runs[i]] = l.events[i]
	}
	for _, c := range claimed {
		var started int64
		require.NoError(t, f.pool.QueryRow(f.ctx, `SELECT started_event FROM dagen_tasks WHERE run_id = $1 AND name = $2`, c.RunID, c.Step).Scan(&started))
		require.Equal(t, started, entries[c.RunID], "an entry's event is its attempt's STARTED event")
	}
	require.Equal(t, min(l.events[0], l.events[1], l.events[2]), l.id, "a lease's id is its least event")

	f.complete(t, f.s, claimed[0], claimed[1])
	require.Len(t, readLeases(t, f.pool), 1, "a task of the claim still runs")
	f.complete(t, f.s, claimed[2])
	require.Len(t, readLeases(t, f.pool), 1, "deleted by the next transaction that ends leases, not by one of its own")

	next := f.claim(t, f.s, 1)
	f.complete(t, f.s, next...)
	ls = readLeases(t, f.pool)
	require.Len(t, ls, 1)
	require.Equal(t, []dag.RunID{next[0].RunID}, ls[0].runs, "the first claim's lease went with the next completion")
}

// TestRescueTakesTheTasksThatStillHoldALease: of a claim of three tasks,
// one completed; when the lease expires with its worker gone, the other
// two are rescued, the completed one is left as it is, and the lease is
// deleted. While the worker heartbeats, the lease moves up instead.
func TestRescueTakesTheTasksThatStillHoldALease(t *testing.T) {
	t.Parallel()
	f := newLeaseFixture(t, 3)
	claimed := f.claim(t, f.s, 3)
	f.complete(t, f.s, claimed[0])

	_, err := f.s.Heartbeat(f.ctx, "w", 5*time.Minute, []store.HeldAttempt{store.HeldOf(&claimed[1]), store.HeldOf(&claimed[2])})
	require.NoError(t, err)
	f.clock.Advance(2 * time.Minute)
	n, err := f.s.RescueExpired(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 0, n, "the worker heartbeats")
	ls := readLeases(t, f.pool)
	require.Len(t, ls, 1)
	require.Equal(t, f.clock.Now().Add(3*time.Minute), ls[0].until.UTC(), "moved up to the worker's deadline")

	f.clock.Advance(4 * time.Minute) // past the worker's deadline
	n, err = f.s.RescueExpired(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, store.TaskCompleted, f.status(t, claimed[0].RunID))
	require.Equal(t, store.TaskQueued, f.status(t, claimed[1].RunID))
	require.Equal(t, store.TaskQueued, f.status(t, claimed[2].RunID))
	require.Empty(t, readLeases(t, f.pool), "no task holds the lease any more")

	again := f.claim(t, f.s, 2)
	require.Equal(t, 2, again[0].Attempt, "claimed again, at the next attempt")
}

// TestLeaderDeletesLeasesNoTaskHolds: a lease whose end the claiming store
// never heard of (here, the tasks were answered through another store, as
// after a restart) is deleted by the leader once it expires, with nothing
// rescued.
func TestLeaderDeletesLeasesNoTaskHolds(t *testing.T) {
	t.Parallel()
	f := newLeaseFixture(t, 3)
	other, err := pgstore.New(f.ctx, f.pool, &pgstore.Config{Now: f.clock.Now})
	require.NoError(t, err)
	claimed := f.claim(t, f.s, 2)
	f.complete(t, other, claimed...)
	next := f.claim(t, other, 1)
	f.complete(t, f.s, next...) // a transaction that ends leases: none it knows of
	require.Len(t, readLeases(t, f.pool), 2)

	f.clock.Advance(2 * time.Minute)
	n, err := f.s.RescueExpired(f.ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, readLeases(t, f.pool))
	for _, c := range append(claimed, next...) {
		require.Equal(t, store.TaskCompleted, f.status(t, c.RunID))
	}
}

// TestRescueTakesLeasesWhole: the limit counts tasks, but a lease is taken
// with all of its tasks; the leases past the limit wait for the next call.
func TestRescueTakesLeasesWhole(t *testing.T) {
	t.Parallel()
	f := newLeaseFixture(t, 5)
	f.claim(t, f.s, 3)
	f.claim(t, f.s, 2)
	f.clock.Advance(2 * time.Minute)
	n, err := f.s.RescueExpired(f.ctx, 2)
	require.NoError(t, err)
	require.Equal(t, 3, n, "the first lease, whole")
	require.Len(t, readLeases(t, f.pool), 1)
	n, err = f.s.RescueExpired(f.ctx, 2)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Empty(t, readLeases(t, f.pool))
}

// TestMigrationMakesALeaseOfEachTaskLease: a version-11 schema's lease of
// one running task becomes a lease listing that task, which the leader
// rescues once it expires.
func TestMigrationMakesALeaseOfEachTaskLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 2)
	applyFirst(t, pool, 11)
	run := dag.RunID{15: 1} // in the range version 10 made from the first id
	for _, sql := range []string{
		`INSERT INTO dagen_runs (id, workflow, fingerprint, tenant, status, pending, created_at)
		 VALUES ($1, 'w', 'fp', 't', 'RUNNING', 1, now())`,
		`INSERT INTO dagen_tasks (run_id, name, seq, kind, parents, children, pending_parents, status, max_attempts,
		                          signature, attempt, worker, started_event, started_at)
		 VALUES ($1, 'a', 0, 'step', '{}', '{}', 0, 'RUNNING', 3, 'w', 1, 'gone', 7, now())`,
		`INSERT INTO dagen_leases (id, run_id, task, worker, lease_until) VALUES (7, $1, 'a', 'gone', now() - interval '1 minute')`,
	} {
		_, err := pool.Exec(ctx, sql, run)
		require.NoError(t, err)
	}
	require.NoError(t, pgstore.Migrate(ctx, pool))
	ls := readLeases(t, pool)
	require.Len(t, ls, 1)
	require.Equal(t, int64(7), ls[0].id)
	require.Equal(t, "gone", ls[0].worker)
	require.Equal(t, []dag.RunID{run}, ls[0].runs)
	require.Equal(t, []string{"a"}, ls[0].tasks)
	require.Equal(t, []int64{7}, ls[0].events)

	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	n, err := s.RescueExpired(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	tasks, err := s.ListTasks(ctx, run)
	require.NoError(t, err)
	require.Equal(t, store.TaskQueued, tasks[0].Status)
	require.Empty(t, readLeases(t, pool))
}

// TestBacklogCountsTheTasksThatHoldTheirLease: of a claim of three first
// steps, one completed (its run goes on); its lease still lists it, but
// only the two that hold the lease count as running.
func TestBacklogCountsTheTasksThatHoldTheirLease(t *testing.T) {
	t.Parallel()
	f := newLeaseFixture(t, 0)
	for range 4 {
		f.runs = append(f.runs, newRun("w", "t", step("a"), step("b", "a")))
	}
	require.NoError(t, f.s.CreateRuns(f.ctx, f.runs))
	claimed := f.claim(t, f.s, 3)
	f.complete(t, f.s, claimed[0])
	require.Len(t, readLeases(t, f.pool)[0].tasks, 3)
	b, err := f.s.Backlog(f.ctx)
	require.NoError(t, err)
	require.Len(t, b, 1)
	b[0].OldestQueued = 0 // its own test: the fleet conformance case
	require.Equal(t, []store.BacklogEntry{{Tenant: "t", Workflow: "w", Running: 2, Queued: 2}}, b,
		"running: the two that hold the lease; queued: the fourth run's a and the first's b")
}
