package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// runIDAt returns a new UUIDv7 run id made at t, as dag.NewRunID makes
// them at the present.
func runIDAt(t time.Time) dag.RunID {
	var id dag.RunID
	_, _ = rand.Read(id[:])
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(id[:6], ms[2:])
	id[6] = 0x70 | id[6]&0x0f
	id[8] = 0x80 | id[8]&0x3f
	return id
}

// partitionFixture is a store whose clock starts an hour ahead of the
// present, past the range migration 009 made (ten minutes ahead), with
// ranges of a minute.
type partitionFixture struct {
	t     *testing.T
	ctx   context.Context
	s     *pgstore.Store
	clock *fakeClock
	t0    time.Time
}

func newPartitionFixture(t *testing.T) *partitionFixture {
	t0 := time.Now().Add(time.Hour).Truncate(time.Minute)
	clock := &fakeClock{now: t0}
	pool := newStore(t, nil, 4).Pool() // migrated schema
	s, err := pgstore.New(context.Background(), pool, &pgstore.Config{Now: clock.Now, PartitionPeriod: time.Minute})
	require.NoError(t, err)
	return &partitionFixture{t: t, ctx: context.Background(), s: s, clock: clock, t0: t0}
}

// ranges returns the suffixes of the ranges, oldest first.
func (f *partitionFixture) ranges() []string {
	f.t.Helper()
	rows, err := f.s.Pool().Query(f.ctx, "SELECT suffix FROM dagen_partitions ORDER BY from_id")
	require.NoError(f.t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(f.t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(f.t, rows.Err())
	return out
}

// partitionOf returns the partition of dagen_runs that holds run id.
func (f *partitionFixture) partitionOf(id dag.RunID) string {
	f.t.Helper()
	var name string
	require.NoError(f.t, f.s.Pool().QueryRow(f.ctx, "SELECT tableoid::regclass::text FROM dagen_runs WHERE id = $1", id.String()).Scan(&name))
	return name
}

// tableExists reports whether a table of that name is in the schema.
func (f *partitionFixture) tableExists(name string) bool {
	f.t.Helper()
	var ok bool
	require.NoError(f.t, f.s.Pool().QueryRow(f.ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&ok))
	return ok
}

// finish claims and completes every queued task.
func (f *partitionFixture) finish() {
	f.t.Helper()
	for {
		claimed, err := f.s.ClaimTasks(f.ctx, store.ClaimParams{Worker: "w", Limit: 100, Lease: time.Hour})
		require.NoError(f.t, err)
		if len(claimed) == 0 {
			return
		}
		results := make([]store.TaskResult, len(claimed))
		for i, c := range claimed {
			results[i] = completed(c)
		}
		_, err = f.s.CompleteTasks(f.ctx, results)
		require.NoError(f.t, err)
	}
}

func (f *partitionFixture) run(at time.Time, key string) store.NewRun {
	r := newRun("w", "acme", step("a"), step("b", "a"))
	r.ID, r.Key = runIDAt(at), key
	return r
}

// TestPartitionsAreMadeAheadAndDroppedWhole: the leader's PruneRuns makes
// ranges ahead of the clock, drops a range whose runs all finished before
// the cutoff (its tables go, its keys are free again), keeps a range one
// of whose runs is still running, with everything of it, and drops it once
// that run has finished too.
func TestPartitionsAreMadeAheadAndDroppedWhole(t *testing.T) {
	t.Parallel()
	f := newPartitionFixture(t)
	ctx := f.ctx

	_, err := f.s.PruneRuns(ctx, f.t0.Add(-time.Hour), 0)
	require.NoError(t, err)
	// Three ahead, from a second past the clock; p0, the migration's,
	// ended and was empty: dropped.
	require.Len(t, f.ranges(), 3, "ranges: %v", f.ranges())

	done := []store.NewRun{f.run(f.t0.Add(10*time.Second), "k1"), f.run(f.t0.Add(20*time.Second), "")}
	require.NoError(t, f.s.CreateRuns(ctx, done))
	f.finish()
	live := f.run(f.t0.Add(70*time.Second), "")
	require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{live}))
	claimed, err := f.s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, claimed, 1, "the live run's first step runs, and stays running")

	first, second := f.partitionOf(done[0].ID), f.partitionOf(live.ID)
	require.Equal(t, first, f.partitionOf(done[1].ID))
	require.NotEqual(t, first, second, "the live run is in the next range")

	f.clock.Advance(5 * time.Minute)
	_, err = f.s.PruneRuns(ctx, f.clock.Now().Add(-time.Minute), 0)
	require.NoError(t, err)

	require.False(t, f.tableExists(first), "the finished range's runs partition is dropped")
	require.False(t, f.tableExists("dagen_tasks"+first[len("dagen_runs"):]), "and its tasks partition")
	require.False(t, f.tableExists("dagen_events"+first[len("dagen_runs"):]), "and its events partition")
	for _, r := range done {
		_, err := f.s.GetRun(ctx, r.ID)
		require.ErrorIs(t, err, store.ErrRunNotFound)
	}
	again := []store.NewRun{f.run(f.clock.Now(), "k1")}
	require.NoError(t, f.s.CreateRuns(ctx, again))
	require.True(t, again[0].Existing.IsZero(), "a dropped run's key is free")

	require.True(t, f.tableExists(second), "the range of a running run is kept")
	got, err := f.s.GetRun(ctx, live.ID)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, got.Status)
	tasks, err := f.s.ListTasks(ctx, live.ID)
	require.NoError(t, err)
	require.Len(t, tasks, 2, "with its tasks")
	ev, err := f.s.ListEvents(ctx, live.ID)
	require.NoError(t, err)
	require.NotEmpty(t, ev, "and its events")

	_, err = f.s.CompleteTasks(ctx, []store.TaskResult{completed(claimed[0])})
	require.NoError(t, err)
	f.finish()
	got, err = f.s.GetRun(ctx, live.ID)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, got.Status)
	f.clock.Advance(2 * time.Minute)
	_, err = f.s.PruneRuns(ctx, f.clock.Now().Add(-time.Minute), 0)
	require.NoError(t, err)
	require.False(t, f.tableExists(second), "the range goes once its last run finished before the cutoff")
	_, err = f.s.GetRun(ctx, live.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound)

	// Ranges stay ahead of the clock.
	for _, at := range []time.Duration{2 * time.Second, time.Minute, 2 * time.Minute} {
		r := f.run(f.clock.Now().Add(at), "")
		require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{r}))
		require.NotEqual(t, "dagen_runs_default", f.partitionOf(r.ID), "a run made %s ahead has a range", at)
	}
}

// TestPartitionDropWaitsForRetry: a retry holds its run's range, so a drop
// that comes meanwhile leaves it; and a retry waits for a drop under way.
func TestPartitionDropWaitsForRetry(t *testing.T) {
	t.Parallel()
	f := newPartitionFixture(t)
	ctx := f.ctx
	_, err := f.s.PruneRuns(ctx, f.t0.Add(-time.Hour), 0)
	require.NoError(t, err)
	r := f.run(f.t0.Add(10*time.Second), "")
	require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{r}))
	f.finish()
	part := f.partitionOf(r.ID)
	f.clock.Advance(5 * time.Minute)

	// A retry's fence, held: the drop leaves the range.
	tx, err := f.s.Pool().Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT suffix FROM dagen_partitions WHERE from_id <= $1 AND $1 < to_id FOR SHARE", r.ID.String())
	require.NoError(t, err)
	_, err = f.s.PruneRuns(ctx, f.clock.Now().Add(-time.Minute), 0)
	require.NoError(t, err, "a busy range is no error: the next round tries again")
	require.True(t, f.tableExists(part), "a range a retry holds is not dropped")
	require.NoError(t, tx.Rollback(ctx))

	// A drop's lock, held: the retry waits for it.
	tx, err = f.s.Pool().Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT suffix FROM dagen_partitions WHERE from_id <= $1 AND $1 < to_id FOR UPDATE", r.ID.String())
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	var retryErr error
	go func() {
		defer wg.Done()
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, retryErr = f.s.RetryRun(rctx, r.ID, store.Retry{Mode: store.RetryAll})
	}()
	wg.Wait()
	require.ErrorIs(t, retryErr, context.DeadlineExceeded, "the retry waited on the range being dropped")
	require.NoError(t, tx.Rollback(ctx))

	res, err := f.s.RetryRun(ctx, r.ID, store.Retry{Mode: store.RetryAll})
	require.NoError(t, err, "with the range free, the retry goes ahead")
	require.NotEmpty(t, res.Reset)
	_, err = f.s.PruneRuns(ctx, f.clock.Now().Add(-time.Minute), 0)
	require.NoError(t, err)
	require.True(t, f.tableExists(part), "the retried run is running again: its range stays")
}

// TestDefaultPartitionHoldsStrayIDs: a run whose id no range holds (a
// clock far ahead) goes to the default partition, no range is made over
// it, and it is pruned by DELETE once finished.
func TestDefaultPartitionHoldsStrayIDs(t *testing.T) {
	t.Parallel()
	f := newPartitionFixture(t)
	ctx := f.ctx
	stray := f.run(f.t0.Add(90*time.Second), "")
	require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{stray}))
	require.Equal(t, "dagen_runs_default", f.partitionOf(stray.ID), "no range holds it yet")
	f.finish()

	_, err := f.s.PruneRuns(ctx, f.t0.Add(-time.Hour), 100)
	require.NoError(t, err)
	require.Equal(t, "dagen_runs_default", f.partitionOf(stray.ID), "ranges are made around it, not over it")
	after := f.run(f.t0.Add(150*time.Second), "")
	require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{after}))
	require.NotEqual(t, "dagen_runs_default", f.partitionOf(after.ID), "ids past it have a range")

	f.clock.Advance(10 * time.Minute)
	n, err := f.s.PruneRuns(ctx, f.clock.Now().Add(-time.Minute), 100)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	_, err = f.s.GetRun(ctx, stray.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "the default partition is pruned by DELETE")
}

// TestMigrationPartitionsExistingRuns: migration 009 turns a version 8
// schema's tables, rows and all, into the first range of the partitioned
// ones, and moves idempotency keys to their own table.
func TestMigrationPartitionsExistingRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 2)
	applyFirst(t, pool, 8)
	old, keyed := dag.NewRunID(), dag.NewRunID()
	for _, r := range []struct {
		id  dag.RunID
		key any
	}{{old, nil}, {keyed, "k1"}} {
		_, err := pool.Exec(ctx, `INSERT INTO dagen_runs (id, workflow, fingerprint, tenant, status, pending, created_at, finished_at, key)
			VALUES ($1, 'w', 'fp', 'acme', 'COMPLETED', 0, now(), now(), $2)`, r.id.String(), r.key)
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO dagen_tasks (run_id, name, seq, kind, parents, children, pending_parents, status, max_attempts)
			VALUES ($1, 'a', 0, 'step', '{}', '{}', 0, 'COMPLETED', 1)`, r.id.String())
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO dagen_events (run_id, at, task, type, attempt) VALUES ($1, now(), 'a', 'COMPLETED', 1)`, r.id.String())
		require.NoError(t, err)
	}

	require.NoError(t, pgstore.Migrate(ctx, pool))
	s, err := pgstore.New(ctx, pool, &pgstore.Config{PartitionPeriod: -1})
	require.NoError(t, err)
	for _, id := range []dag.RunID{old, keyed} {
		got, err := s.GetRun(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, got.Status)
		tasks, err := s.ListTasks(ctx, id)
		require.NoError(t, err)
		require.Len(t, tasks, 1)
		var part string
		require.NoError(t, pool.QueryRow(ctx, "SELECT tableoid::regclass::text FROM dagen_runs WHERE id = $1", id.String()).Scan(&part))
		require.Equal(t, "dagen_runs_p0", part, "the old table is the first range")
	}
	again := newRun("w", "acme", step("a"))
	again.Key = "k1"
	runs := []store.NewRun{again}
	require.NoError(t, s.CreateRuns(ctx, runs))
	require.Equal(t, keyed, runs[0].Existing, "the key kept by the old run holds")
	fresh := newRun("w", "acme", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{fresh}))
	var part string
	require.NoError(t, pool.QueryRow(ctx, "SELECT tableoid::regclass::text FROM dagen_runs WHERE id = $1", fresh.ID.String()).Scan(&part))
	require.Equal(t, "dagen_runs_default", part, "the default partition holds the ids made since, until the leader makes ranges")
	_, err = s.PruneRuns(ctx, time.Now().Add(-time.Hour), 0)
	require.NoError(t, err)
	later := newRun("w", "acme", step("a"))
	later.ID = runIDAt(time.Now().Add(2 * time.Second))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{later}))
	require.NoError(t, pool.QueryRow(ctx, "SELECT tableoid::regclass::text FROM dagen_runs WHERE id = $1", later.ID.String()).Scan(&part))
	require.NotEqual(t, "dagen_runs_default", part, "then ranges hold them")
}

// TestPartitioningIsOffByDefault: without Config.PartitionPeriod the
// leader makes no range, and runs go to the default partition.
func TestPartitioningIsOffByDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, nil, 2)
	_, err := s.PruneRuns(ctx, time.Now().Add(-time.Hour), 10)
	require.NoError(t, err)
	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT count(*) FROM dagen_partitions WHERE suffix <> 'p0'").Scan(&n))
	require.Zero(t, n)
	r := newRun("w", "acme", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
	var part string
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT tableoid::regclass::text FROM dagen_runs WHERE id = $1", r.ID.String()).Scan(&part))
	require.Equal(t, "dagen_runs_default", part)
}
