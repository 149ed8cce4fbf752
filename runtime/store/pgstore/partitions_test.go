package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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
	return newPartitionFixtureOn(t, newStore(t, nil, 4).Pool()) // migrated schema
}

// newPartitionFixtureOn is newPartitionFixture on pool, a migrated schema.
func newPartitionFixtureOn(t *testing.T, pool *pgxpool.Pool) *partitionFixture {
	t0 := time.Now().Add(time.Hour).Truncate(time.Minute)
	clock := &fakeClock{now: t0}
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

// prune calls PruneRuns, which must not fail, and returns what it pruned.
func (f *partitionFixture) prune(cutoff time.Time, limit int, msgAndArgs ...any) int {
	f.t.Helper()
	n, err := f.s.PruneRuns(f.ctx, cutoff, limit)
	require.NoError(f.t, err, msgAndArgs...)
	return n
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

	f.prune(f.t0.Add(-time.Hour), 0)
	// Three ahead, from the clock; p0, the migration's, ended and was
	// empty: dropped.
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
	f.prune(f.clock.Now().Add(-time.Minute), 0)

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
	f.prune(f.clock.Now().Add(-time.Minute), 0)
	require.False(t, f.tableExists(second), "the range goes once its last run finished before the cutoff")
	_, err = f.s.GetRun(ctx, live.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound)

	// Ranges stay ahead of the clock: a run made ahead finds its range.
	before := len(f.ranges())
	for _, at := range []time.Duration{2 * time.Second, time.Minute, 2 * time.Minute} {
		r := f.run(f.clock.Now().Add(at), "")
		require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{r}))
		require.Contains(t, f.partitionOf(r.ID), "dagen_runs_p", "a run made %s ahead", at)
	}
	require.Len(t, f.ranges(), before, "no range was made for them")
}

// TestPartitionDropWaitsForRetry: a retry holds its run's range, so a drop
// that comes meanwhile leaves it; and a retry waits for a drop under way.
func TestPartitionDropWaitsForRetry(t *testing.T) {
	t.Parallel()
	f := newPartitionFixture(t)
	ctx := f.ctx
	f.prune(f.t0.Add(-time.Hour), 0)
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
	f.prune(f.clock.Now().Add(-time.Minute), 0, "a busy range is no error: the next round tries again")
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
	f.prune(f.clock.Now().Add(-time.Minute), 0)
	require.True(t, f.tableExists(part), "the retried run is running again: its range stays")
}

// TestRunWithoutRangeGetsOne: a run whose id no range holds (a clock far
// ahead, or far behind once the oldest ranges are gone) is created all the
// same, in a range made for it that leaves the others as they are; the
// leader's next ranges start past it.
func TestRunWithoutRangeGetsOne(t *testing.T) {
	t.Parallel()
	f := newPartitionFixture(t)
	ctx := f.ctx
	f.prune(f.t0.Add(-time.Hour), 0)
	made := f.ranges()

	ahead := f.run(f.t0.Add(time.Hour), "k-ahead")
	behind := f.run(f.t0.Add(-30*time.Minute), "")
	runs := []store.NewRun{ahead, behind}
	require.NoError(t, f.s.CreateRuns(ctx, runs), "runs without a range are created")
	require.Len(t, f.ranges(), len(made)+2, "one range each")
	for _, r := range runs {
		got, err := f.s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, store.RunRunning, got.Status)
		require.NotContains(t, made, f.partitionOf(r.ID)[len("dagen_runs_"):], "in a range of its own")
	}
	f.finish()
	dup := []store.NewRun{f.run(f.t0.Add(time.Hour+time.Second), "k-ahead")}
	require.NoError(t, f.s.CreateRuns(ctx, dup))
	require.Equal(t, ahead.ID, dup[0].Existing, "its key holds")

	// A schedule's runs get a range the same way.
	ref := store.ScheduleRef{Workflow: "w", Tenant: "acme", Name: "nightly"}
	require.NoError(t, f.s.PutSchedule(ctx, store.Schedule{ScheduleRef: ref, Cron: "@daily", Catchup: store.CatchupLatest, Input: []byte("{}"), NextAt: f.t0}))
	due, _, err := f.s.DueSchedules(ctx, []string{"w"}, 1)
	require.NoError(t, err)
	require.Len(t, due, 1)
	fire := f.run(f.t0.Add(-2*time.Hour), store.ScheduleKey("nightly", due[0].NextAt))
	fired, err := f.s.FireSchedule(ctx, store.ScheduleFiring{ScheduleRef: ref, Due: due[0].NextAt, Next: due[0].NextAt.Add(24 * time.Hour), Last: due[0].NextAt, Runs: []store.NewRun{fire}})
	require.NoError(t, err)
	require.True(t, fired)
	_, err = f.s.GetRun(ctx, fire.ID)
	require.NoError(t, err)

	// The leader's ranges go on from the last one, past the run ahead.
	f.clock.Advance(time.Hour)
	f.prune(f.t0.Add(-time.Hour), 0)
	next := f.run(f.clock.Now().Add(90*time.Second), "")
	require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{next}))
	var overlaps int
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT count(*) FROM dagen_partitions a JOIN dagen_partitions b
		ON a.suffix < b.suffix AND a.from_id < b.to_id AND b.from_id < a.to_id`).Scan(&overlaps))
	require.Zero(t, overlaps, "ranges never overlap")
}

// TestConcurrentCreationsShareARange: creations at once whose runs no
// range holds all make the same range; the one that makes it first wins
// and the others, whatever Postgres tells them of the race, create their
// runs in it.
func TestConcurrentCreationsShareARange(t *testing.T) {
	t.Parallel()
	f := newPartitionFixture(t)
	f.prune(f.t0.Add(-time.Hour), 0)
	made := f.ranges()
	for round := range 5 {
		at := f.t0.Add(time.Duration(2+round) * time.Hour)
		const workers = 8
		errs := make([]error, workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = f.s.CreateRuns(f.ctx, []store.NewRun{f.run(at.Add(time.Duration(i)*time.Millisecond), "")})
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "round %d, worker %d", round, i)
		}
		require.Len(t, f.ranges(), len(made)+round+1, "round %d: one range for the creations at once", round)
	}
}

// TestDropAttachesBackForLateRun: a drop under way (its range marked, as
// a leader that stopped half way leaves it) finds a run still running in
// the range once it is detached, and attaches the range again; meanwhile
// a retry of a finished run in it is refused, not lost.
func TestDropAttachesBackForLateRun(t *testing.T) {
	t.Parallel()
	f := newPartitionFixture(t)
	ctx := f.ctx
	f.prune(f.t0.Add(-time.Hour), 0)
	done := f.run(f.t0.Add(10*time.Second), "")
	require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{done}))
	f.finish()
	late := f.run(f.t0.Add(20*time.Second), "")
	require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{late}))
	part := f.partitionOf(late.ID)
	suffix := part[len("dagen_runs_"):]

	_, err := f.s.Pool().Exec(ctx, "UPDATE dagen_partitions SET dropping = true WHERE suffix = $1", suffix)
	require.NoError(t, err)
	_, err = f.s.RetryRun(ctx, done.ID, store.Retry{Mode: store.RetryAll})
	require.ErrorIs(t, err, store.ErrRunNotFound, "a range being dropped takes no retry")
	// One of its tables detached already, as a stop half way leaves it.
	_, err = f.s.Pool().Exec(ctx, "ALTER TABLE dagen_tasks DETACH PARTITION "+"dagen_tasks_"+suffix)
	require.NoError(t, err)

	f.clock.Advance(10 * time.Minute)
	f.prune(f.clock.Now().Add(-time.Minute), 0)
	require.Equal(t, part, f.partitionOf(late.ID), "the range is attached again")
	tasks, err := f.s.ListTasks(ctx, late.ID)
	require.NoError(t, err)
	require.Len(t, tasks, 2, "with its tasks")
	var dropping bool
	require.NoError(t, f.s.Pool().QueryRow(ctx, "SELECT dropping FROM dagen_partitions WHERE suffix = $1", suffix).Scan(&dropping))
	require.False(t, dropping)

	f.finish()
	f.clock.Advance(10 * time.Minute)
	n := f.prune(f.clock.Now().Add(-time.Minute), 0)
	require.GreaterOrEqual(t, n, 2, "once both finished, the range goes")
	require.False(t, f.tableExists(part))
	require.False(t, f.tableExists("dagen_tasks_"+suffix))
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
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{fresh}), "an id made since has a range made for it")
	var part string
	require.NoError(t, pool.QueryRow(ctx, "SELECT tableoid::regclass::text FROM dagen_runs WHERE id = $1", fresh.ID.String()).Scan(&part))
	require.Contains(t, part, "dagen_runs_p")
	require.NotEqual(t, "dagen_runs_p0", part)
}

// TestMigrationMovesDefaultPartitions: migration 010 gives the rows of
// version 9's default partitions ranges: in place when they lie between
// the same two ranges, by copy when they lie between several.
func TestMigrationMovesDefaultPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	insert := func(t *testing.T, pool *pgxpool.Pool, id dag.RunID) {
		t.Helper()
		_, err := pool.Exec(ctx, `INSERT INTO dagen_runs (id, workflow, fingerprint, tenant, status, pending, created_at, finished_at)
			VALUES ($1, 'w', 'fp', 'acme', 'COMPLETED', 0, now(), now())`, id.String())
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO dagen_tasks (run_id, name, seq, kind, parents, children, pending_parents, status, max_attempts)
			VALUES ($1, 'a', 0, 'step', '{}', '{}', 0, 'COMPLETED', 1)`, id.String())
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO dagen_events (run_id, at, task, type, attempt) VALUES ($1, now(), 'a', 'COMPLETED', 1)`, id.String())
		require.NoError(t, err)
	}
	check := func(t *testing.T, pool *pgxpool.Pool, ids []dag.RunID) []string {
		t.Helper()
		require.NoError(t, pgstore.Migrate(ctx, pool))
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname LIKE 'dagen_%_default' AND relnamespace = current_schema()::regnamespace").Scan(&n))
		require.Zero(t, n, "no default partition is left")
		s, err := pgstore.New(ctx, pool, nil)
		require.NoError(t, err)
		var parts []string
		for _, id := range ids {
			tasks, err := s.ListTasks(ctx, id)
			require.NoError(t, err)
			require.Len(t, tasks, 1)
			ev, err := s.ListEvents(ctx, id)
			require.NoError(t, err)
			require.Len(t, ev, 1)
			var part string
			require.NoError(t, pool.QueryRow(ctx, "SELECT tableoid::regclass::text FROM dagen_runs WHERE id = $1", id.String()).Scan(&part))
			var listed bool
			require.NoError(t, pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM dagen_partitions WHERE 'dagen_runs_' || suffix = $1 AND from_id <= $2 AND $2 < to_id)", part, id.String()).Scan(&listed))
			require.True(t, listed, "run %s is in a listed range that holds its id (%s)", id, part)
			parts = append(parts, part)
		}
		return parts
	}

	t.Run("in place", func(t *testing.T) {
		pool := pgtest.NewPool(t, 2)
		applyFirst(t, pool, 9)
		a, b := runIDAt(time.Now().Add(time.Minute)), runIDAt(time.Now().Add(time.Hour))
		insert(t, pool, a)
		insert(t, pool, b)
		var oid1 uint32
		require.NoError(t, pool.QueryRow(ctx, "SELECT 'dagen_runs_default'::regclass::oid").Scan(&oid1))
		parts := check(t, pool, []dag.RunID{a, b})
		require.Equal(t, parts[0], parts[1], "one range")
		var oid2 uint32
		require.NoError(t, pool.QueryRow(ctx, "SELECT $1::regclass::oid", parts[0]).Scan(&oid2))
		require.Equal(t, oid1, oid2, "the default table itself, not a copy")
	})
	t.Run("by copy", func(t *testing.T) {
		pool := pgtest.NewPool(t, 2)
		applyFirst(t, pool, 9)
		// A range from +10m to +20m, as version 9's leader made them.
		lo, hi := runIDAt(time.Now().Add(10*time.Minute).Truncate(time.Second)), runIDAt(time.Now().Add(20*time.Minute).Truncate(time.Second))
		lo, hi = boundOf(lo), boundOf(hi)
		for _, tb := range []string{"dagen_runs", "dagen_tasks", "dagen_events"} {
			_, err := pool.Exec(ctx, "CREATE TABLE "+tb+"_pmid PARTITION OF "+tb+" FOR VALUES FROM ('"+lo.String()+"') TO ('"+hi.String()+"')")
			require.NoError(t, err)
		}
		_, err := pool.Exec(ctx, "INSERT INTO dagen_partitions (suffix, from_id, to_id) VALUES ('pmid', $1, $2)", lo.String(), hi.String())
		require.NoError(t, err)
		a, mid, b := runIDAt(time.Now().Add(time.Minute)), runIDAt(time.Now().Add(15*time.Minute)), runIDAt(time.Now().Add(time.Hour))
		for _, id := range []dag.RunID{a, mid, b} {
			insert(t, pool, id)
		}
		parts := check(t, pool, []dag.RunID{a, mid, b})
		require.Equal(t, "dagen_runs_pmid", parts[1], "a run in a range stays")
		require.NotEqual(t, parts[0], parts[2], "the gaps on each side get a range each")
	})
}

// boundOf returns the lowest id of id's millisecond, as a range's bound.
func boundOf(id dag.RunID) dag.RunID {
	var b dag.RunID
	copy(b[:6], id[:6])
	return b
}

// TestPartitionPeriodIsHalfTheRetention: by default the leader makes
// ranges half the retention wide, three ahead.
func TestPartitionPeriodIsHalfTheRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, nil, 2)
	_, err := s.PruneRuns(ctx, time.Now().Add(-time.Hour), 10)
	require.NoError(t, err)
	rows, err := s.Pool().Query(ctx, "SELECT from_id::text, to_id::text FROM dagen_partitions WHERE suffix <> 'p0' ORDER BY from_id")
	require.NoError(t, err)
	var widths []time.Duration
	for rows.Next() {
		var from, to string
		require.NoError(t, rows.Scan(&from, &to))
		lo, err := dag.ParseRunID(from)
		require.NoError(t, err)
		hi, err := dag.ParseRunID(to)
		require.NoError(t, err)
		widths = append(widths, msOf(hi).Sub(msOf(lo)))
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []time.Duration{30 * time.Minute, 30 * time.Minute, 30 * time.Minute}, widths)
}

// msOf returns the millisecond a UUIDv7 was made.
func msOf(id dag.RunID) time.Time {
	var b [8]byte
	copy(b[2:], id[:6])
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b[:])))
}

// TestPruneVacuumsQueuesWhereAutovacuumIsOff: the leader's PruneRuns
// vacuums the queue tables when the server's autovacuum is off, and leaves
// them to autovacuum when it is on.
func TestPruneVacuumsQueuesWhereAutovacuumIsOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := freshStore(t, nil, 2)
	var autovacuum bool
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT current_setting('autovacuum')::boolean").Scan(&autovacuum))
	_, err := s.PruneRuns(ctx, time.Now().Add(-time.Hour), 10)
	require.NoError(t, err)
	var vacuumed bool
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables
		WHERE relid = 'dagen_ready'::regclass`).Scan(&vacuumed))
	require.Equal(t, !autovacuum, vacuumed, "autovacuum on: %v", autovacuum)
}

// TestDeleteLeavesYoungRunsToTheirRange: pruning deletes a finished run
// one by one only when it was made more than a period before the cutoff
// (its range, kept by a live run, would otherwise hold it for long); a
// younger one goes with its range.
func TestDeleteLeavesYoungRunsToTheirRange(t *testing.T) {
	t.Parallel()
	f := newPartitionFixture(t)
	ctx := f.ctx
	f.prune(f.t0.Add(-time.Hour), 0)
	young := f.run(f.t0.Add(10*time.Second), "")
	live := f.run(f.t0.Add(20*time.Second), "")
	require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{young}))
	f.finish()
	require.NoError(t, f.s.CreateRuns(ctx, []store.NewRun{live}))
	_, err := f.s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Hour})
	require.NoError(t, err)

	f.clock.Advance(90 * time.Second) // made 80s before now, finished at t0
	n := f.prune(f.clock.Now().Add(-30*time.Second), 100)
	require.Zero(t, n, "made 50s before the cutoff, less than a period: left to its range")
	_, err = f.s.GetRun(ctx, young.ID)
	require.NoError(t, err)

	f.clock.Advance(time.Minute)
	n = f.prune(f.clock.Now().Add(-30*time.Second), 100)
	require.Equal(t, 1, n, "made more than a period before the cutoff, in a range a live run keeps: deleted")
	_, err = f.s.GetRun(ctx, young.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound)
	_, err = f.s.GetRun(ctx, live.ID)
	require.NoError(t, err)
}

// TestPruneDoesNotCountARangeThatARecentRunKeeps: a range that ended, but
// holds a run made after the cutoff, is kept after one look at the runs'
// key, without PartitionRuns's count of all of its runs; once the cutoff
// passes its last run, it is counted and dropped.
func TestPruneDoesNotCountARangeThatARecentRunKeeps(t *testing.T) {
	pool, log := tracedPool(t)
	f := newPartitionFixtureOn(t, pool)
	t0 := f.t0
	f.prune(t0.Add(-time.Hour), 0) // ranges from t0 on
	require.NoError(t, f.s.CreateRuns(f.ctx, []store.NewRun{f.run(t0.Add(10*time.Second), ""), f.run(t0.Add(50*time.Second), "")}))
	f.clock.Advance(55 * time.Second)
	f.finish() // at t0+55s
	first := f.ranges()[0]
	counts := func() int { return log.count("PartitionRuns") }

	f.clock.Advance(65 * time.Second) // t0+2m: the first range ended a minute ago
	before := counts()
	f.prune(t0.Add(30*time.Second), 0)
	require.Equal(t, first, f.ranges()[0], "a run made at t0+50s keeps the range")
	require.Equal(t, before, counts(), "kept without counting its runs")

	f.prune(t0.Add(90*time.Second), 0)
	require.NotEqual(t, first, f.ranges()[0], "every run finished before the cutoff: dropped")
	require.Greater(t, counts(), before, "counted before its drop")
}

// TestCompletionsLockRunsAcrossRanges: completions whose runs lie in two
// ranges, each batch holding a child of every run, are stored at once
// from as many goroutines, so that each waits for the locks of runs the
// one before it wrote. Every result is applied: a batch never takes a run
// it waited for for gone. (Locked through a LIMIT 1 subquery per run,
// Postgres 15 returned no row for a run whose range differed from the
// run's before it once its lock had waited: the result was taken for
// stale, its task stayed RUNNING with nobody to run it, and its run
// never finished.)
func TestCompletionsLockRunsAcrossRanges(t *testing.T) {
	t.Parallel()
	const perRange, width, reps = 4, 8, 5
	f := newPartitionFixtureOn(t, newStore(t, nil, width).Pool())
	ctx := f.ctx
	f.prune(f.t0.Add(-time.Hour), 0) // ranges of a minute, ahead of the clock
	tasks := []store.NewTask{step("root")}
	for i := range width {
		tasks = append(tasks, step(fmt.Sprintf("c%d", i), "root"))
	}
	for rep := range reps {
		var runs []store.NewRun
		for i := range 2 * perRange {
			r := newRun("fan", fmt.Sprintf("tenant-%d", i), tasks...)
			r.ID = runIDAt(f.t0.Add(time.Duration(i/perRange)*time.Minute + time.Duration(rep)*time.Second))
			runs = append(runs, r)
		}
		require.NoError(t, f.s.CreateRuns(ctx, runs))
		require.NotEqual(t, f.partitionOf(runs[0].ID), f.partitionOf(runs[len(runs)-1].ID), "the runs lie in two ranges")
		claimAndComplete(t, f.s, len(runs)) // the roots
		children, err := f.s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1000, Lease: time.Hour})
		require.NoError(t, err)
		require.Len(t, children, len(runs)*width)

		// Batch j holds child j of every run.
		batches := make([][]store.TaskResult, width)
		for _, ct := range children {
			j := int(ct.Step[1] - '0')
			batches[j] = append(batches[j], completed(ct))
		}
		var wg sync.WaitGroup
		errs := make(chan error, width)
		for _, batch := range batches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs, err := f.s.CompleteTasks(ctx, batch)
				if err == nil {
					err = allCompleted(batch, outs)
				}
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "repetition %d", rep)
		}
		for _, r := range runs {
			got, err := f.s.GetRun(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, got.Status, "repetition %d: run %s", rep, r.ID)
		}
	}
}
