package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

func step(name string, parents ...string) store.NewTask {
	return store.NewTask{Name: name, Kind: store.KindStep, Parents: parents, MaxAttempts: 3}
}

// newRun returns a run; tasks without a signature get the workflow's name.
func newRun(workflow, tenant string, tasks ...store.NewTask) store.NewRun {
	for i := range tasks {
		if tasks[i].Signature == "" {
			tasks[i].Signature = workflow
		}
	}
	return store.NewRun{ID: dag.NewRunID(), Workflow: workflow, Fingerprint: "fp", Tenant: tenant, Input: []byte(`{}`), Tasks: tasks}
}

func completed(ct store.ClaimedTask) store.TaskResult {
	return store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeCompleted, Output: []byte(`1`)}
}

// claimAndComplete claims n tasks, all of which must come, and completes
// them in one batch.
func claimAndComplete(t testing.TB, s store.Store, n int) {
	t.Helper()
	ctx := context.Background()
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: n, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, n)
	results := make([]store.TaskResult, len(claimed))
	for i, c := range claimed {
		results[i] = completed(c)
	}
	_, err = s.CompleteTasks(ctx, results)
	require.NoError(t, err)
}

// allCompleted returns an error naming the first of results whose
// outcome (outs, by result) is not completed.
func allCompleted(results []store.TaskResult, outs []store.CompletionOutcome) error {
	for i, o := range outs {
		if o.Outcome != store.OutcomeCompleted {
			return fmt.Errorf("%s/%s: outcome %s, not completed", results[i].RunID, results[i].Step, o.Outcome)
		}
	}
	return nil
}

// createInBatches creates runs 1,000 at a time.
func createInBatches(t testing.TB, s store.Store, runs []store.NewRun) {
	t.Helper()
	for len(runs) > 0 {
		n := min(len(runs), 1000)
		require.NoError(t, s.CreateRuns(context.Background(), runs[:n]))
		runs = runs[n:]
	}
}

// stores returns n stores on one schema, each with its own pool of one
// connection: n worker processes.
func stores(t *testing.T, n int, now func() time.Time) []*pgstore.Store {
	t.Helper()
	schema := schemas.Get(t)
	out := make([]*pgstore.Store, n)
	for i := range out {
		pool := pgtest.Pool(t, schema, 1)
		s, err := pgstore.New(context.Background(), pool, &pgstore.Config{Now: now})
		require.NoError(t, err)
		out[i] = s
	}
	return out
}

// TestWorkersDrainWithoutLossOrDuplicates has 8 workers, each on its own
// connection, drain 5,000 tasks: 1,000 chains of 5 across 7 tenants.
func TestWorkersDrainWithoutLossOrDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const workers, runs, chain = 8, 1000, 5
	ss := stores(t, workers, nil)
	batch := make([]store.NewRun, runs)
	for i := range batch {
		tasks := []store.NewTask{step("s0")}
		for k := 1; k < chain; k++ {
			tasks = append(tasks, step(fmt.Sprintf("s%d", k), fmt.Sprintf("s%d", k-1)))
		}
		batch[i] = newRun("chain", fmt.Sprintf("tenant-%d", i%7), tasks...)
	}
	createInBatches(t, ss[0], batch)

	var mu sync.Mutex
	claims := make(map[string]int, runs*chain)
	var finished atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for finished.Load() < runs {
				got, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: fmt.Sprintf("w%d", w), Limit: 16, Lease: time.Hour})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				results := make([]store.TaskResult, len(got))
				mu.Lock()
				for i, ct := range got {
					claims[ct.RunID.String()+"/"+ct.Step]++
					results[i] = completed(ct)
				}
				mu.Unlock()
				outs, err := s.CompleteTasks(ctx, results)
				if err == nil {
					err = allCompleted(results, outs)
				}
				if err != nil {
					errs <- err
					return
				}
				for _, o := range outs {
					if o.RunStatus == store.RunCompleted {
						finished.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, claims, runs*chain, "no task lost")
	for k, n := range claims {
		require.Equal(t, 1, n, "task %s claimed %d times", k, n)
	}
	var left int
	require.NoError(t, ss[0].Pool().QueryRow(ctx, `SELECT count(*) FROM dagen_ready`).Scan(&left))
	require.Zero(t, left)
	require.NoError(t, ss[0].Pool().QueryRow(ctx, `SELECT count(*) FROM dagen_runs WHERE status <> 'COMPLETED'`).Scan(&left))
	require.Zero(t, left)
}

// TestFanInUnderConcurrentCompletion completes the 64 middles of a 1→64→1
// run from 64 goroutines at once, 50 times: the join is enqueued exactly
// once each time.
func TestFanInUnderConcurrentCompletion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const width, reps = 64, 50
	s := newStore(t, nil, 16)
	tasks := []store.NewTask{step("root")}
	var mids []string
	for i := range width {
		mids = append(mids, fmt.Sprintf("m%02d", i))
		tasks = append(tasks, step(mids[i], "root"))
	}
	tasks = append(tasks, step("join", mids...))
	for rep := range reps {
		r := newRun("fan", "t", tasks...)
		require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
		root, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Hour})
		require.NoError(t, err)
		require.Len(t, root, 1)
		outs, err := s.CompleteTasks(ctx, []store.TaskResult{completed(root[0])})
		require.NoError(t, err)
		require.Equal(t, width, outs[0].Enqueued)
		claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 100, Lease: time.Hour})
		require.NoError(t, err)
		require.Len(t, claimed, width)

		var enqueued atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, width)
		for _, ct := range claimed {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results := []store.TaskResult{completed(ct)}
				outs, err := s.CompleteTasks(ctx, results)
				if err != nil {
					errs <- err
					return
				}
				if err := allCompleted(results, outs); err != nil {
					errs <- err
				}
				enqueued.Add(int64(outs[0].Enqueued))
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.EqualValues(t, 1, enqueued.Load(), "repetition %d: the join is enqueued exactly once", rep)
		join, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Hour})
		require.NoError(t, err)
		require.Len(t, join, 1)
		require.Equal(t, "join", join[0].Step)
		require.Len(t, join[0].Parents, width)
		outs, err = s.CompleteTasks(ctx, []store.TaskResult{completed(join[0])})
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, outs[0].RunStatus)
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestFairnessAfterRetriesAndTimers: tenant B's 10,000 tasks are claimed,
// retried and woken from timers; tenant A's one task still comes first.
func TestFairnessAfterRetriesAndTimers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	s := newStore(t, clock.Now, 4)
	const bulk = 10_000
	runs := make([]store.NewRun, bulk)
	for i := range runs {
		runs[i] = newRun("wf", "B", step("a"))
	}
	createInBatches(t, s, runs)

	// Fresh enqueue: A behind B's 10,000 is among the first 2.
	a1 := newRun("wf", "A", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{a1}))
	assertServedFirst(t, s, a1.ID)

	// The ids follow the formula: group + 2^20 * block, one block per task.
	var badIDs int
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT count(*) FROM dagen_ready q
		JOIN dagen_tenant_groups g ON g.tenant = 'B'
		WHERE q.id % 1048576 <> g.group_id OR q.id / 1048576 >= g.block_ptr`).Scan(&badIDs))
	require.Zero(t, badIDs)

	// Every B task is claimed, retried, and woken from its timer.
	for {
		batch, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1000, Lease: time.Hour})
		require.NoError(t, err)
		if len(batch) == 0 {
			break
		}
		results := make([]store.TaskResult, len(batch))
		for i, ct := range batch {
			results[i] = store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeRetry, Error: "x", Delay: time.Second}
		}
		_, err = s.CompleteTasks(ctx, results)
		require.NoError(t, err)
	}
	clock.Advance(time.Second)
	woken := 0
	for {
		n, err := s.FireTimers(ctx, 1000)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		woken += n
	}
	require.Equal(t, bulk-1, woken, "every B task but the one claimed beside A's")

	a2 := newRun("wf", "A", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{a2}))
	assertServedFirst(t, s, a2.ID)
}

func assertServedFirst(t *testing.T, s store.Store, id dag.RunID) {
	t.Helper()
	first, err := s.ClaimTasks(context.Background(), store.ClaimParams{Worker: "w", Limit: 2, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, first, 2)
	require.True(t, first[0].RunID == id || first[1].RunID == id, "run %s among the first 2 claimed: %v", id, first)
}

// TestTimerFiresOnceWithTwoPollers has two workers, each on its own
// connection, fire the same 500 due timers.
func TestTimerFiresOnceWithTwoPollers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	ss := stores(t, 2, clock.Now)
	const n = 500
	runs := make([]store.NewRun, n)
	for i := range runs {
		runs[i] = newRun("wf", "t", store.NewTask{Name: "nap", Kind: store.KindSleep, MaxAttempts: 1}, step("after", "nap"))
	}
	createInBatches(t, ss[0], runs)
	for {
		got, err := ss[0].ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 100, Lease: time.Hour})
		require.NoError(t, err)
		if len(got) == 0 {
			break
		}
		results := make([]store.TaskResult, len(got))
		for i, ct := range got {
			results[i] = store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeSleep, Delay: time.Hour}
		}
		_, err = ss[0].CompleteTasks(ctx, results)
		require.NoError(t, err)
	}
	clock.Advance(time.Hour)

	var fired atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(ss))
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, err := s.FireTimers(ctx, 7)
				if err != nil {
					errs <- err
					return
				}
				fired.Add(int64(k))
				if _, pending, err := s.NextTimer(ctx); err != nil || !pending {
					if err != nil {
						errs <- err
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, n, fired.Load(), "every timer fired exactly once")
	var woken, dup int
	require.NoError(t, ss[0].Pool().QueryRow(ctx, `SELECT count(*) FROM dagen_events WHERE type = 'WOKEN'`).Scan(&woken))
	require.Equal(t, n, woken)
	require.NoError(t, ss[0].Pool().QueryRow(ctx, `
		SELECT count(*) FROM (SELECT run_id FROM dagen_events WHERE type = 'WOKEN' GROUP BY run_id HAVING count(*) > 1) d`).Scan(&dup))
	require.Zero(t, dup)
	var ready int
	require.NoError(t, ss[0].Pool().QueryRow(ctx, `SELECT count(*) FROM dagen_ready`).Scan(&ready))
	require.Equal(t, n, ready, "each sleeper's child enqueued once")
}

// TestSleepSurvivesReopen closes the pool while a task sleeps; a new pool
// on the same schema finds the timer and wakes the task.
func TestSleepSurvivesReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 2)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	s, err := pgstore.New(ctx, pool, &pgstore.Config{Now: clock.Now})
	require.NoError(t, err)
	r := newRun("wf", "t", store.NewTask{Name: "nap", Kind: store.KindSleep, MaxAttempts: 1}, step("after", "nap"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
	nap, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, nap, 1)
	wake := clock.Now().Add(24 * time.Hour)
	_, err = s.CompleteTasks(ctx, []store.TaskResult{{RunID: r.ID, Step: "nap", Attempt: 1, Claim: nap[0].Claim, Outcome: store.OutcomeSleep, WakeAt: wake}})
	require.NoError(t, err)
	pool.Close()

	clock.Advance(24 * time.Hour)
	pool2 := pgtest.Pool(t, schema, 2)
	require.NoError(t, pgstore.Migrate(ctx, pool2))
	s2, err := pgstore.New(ctx, pool2, &pgstore.Config{Now: clock.Now})
	require.NoError(t, err)
	next, pending, err := s2.NextTimer(ctx)
	require.NoError(t, err)
	require.True(t, pending)
	require.True(t, next.Equal(wake), "wake %v, want %v", next, wake)
	n, err := s2.FireTimers(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	after, err := s2.ClaimTasks(ctx, store.ClaimParams{Worker: "w2", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, after, 1)
	require.Equal(t, "after", after[0].Step)
}

// TestMixedContention runs claims, completions of every outcome, failures,
// cancellations, timers and rescues at once on separate connections. Every
// operation must succeed (no deadlock, no constraint violation) and every
// run must end in a state the rules allow.
func TestMixedContention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ss := stores(t, 6, nil)
	tasks := []store.NewTask{step("root")}
	var mids []string
	for i := range 6 {
		mids = append(mids, fmt.Sprintf("m%d", i))
		tasks = append(tasks, step(mids[i], "root"))
	}
	tasks = append(tasks, step("join", mids...), store.NewTask{Name: "@onfailure", Kind: store.KindOnFailure, MaxAttempts: 1})
	const runs = 300
	batch := make([]store.NewRun, runs)
	ids := make([]dag.RunID, runs)
	for i := range batch {
		batch[i] = newRun("mix", fmt.Sprintf("tenant-%d", i%5), tasks...)
		ids[i] = batch[i].ID
	}
	createInBatches(t, ss[0], batch)

	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	done := func() bool {
		var n int
		err := ss[0].Pool().QueryRow(ctx, `SELECT count(*) FROM dagen_runs WHERE status = 'RUNNING'`).Scan(&n)
		return err == nil && n == 0 || time.Now().After(deadline)
	}
	var stop atomic.Bool
	// Workers: complete, skip, retry with no delay, or fail.
	for w := range 4 {
		s := ss[w]
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for !stop.Load() {
				got, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: fmt.Sprintf("w%d", w), Limit: 8, Lease: time.Hour})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				results := make([]store.TaskResult, len(got))
				for i, ct := range got {
					res := completed(ct)
					switch p := rng.IntN(100); {
					case p < 3:
						res.Outcome, res.Error = store.OutcomeFailed, "boom"
					case p < 10:
						res.Outcome, res.Reason = store.OutcomeSkipped, "skip=p"
					case p < 20 && ct.Attempt < 3:
						res.Outcome, res.Error = store.OutcomeRetry, "flaky"
					}
					results[i] = res
				}
				if _, err := s.CompleteTasks(ctx, results); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Housekeeping: timers and rescues, and a canceller.
	wg.Add(2)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if _, err := ss[4].FireTimers(ctx, 50); err != nil {
				errs <- err
				return
			}
			if _, err := ss[4].RescueExpired(ctx, 50); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < runs && !stop.Load(); i += 7 {
			if _, err := ss[5].CancelRun(ctx, ids[i]); err != nil {
				errs <- err
				return
			}
		}
	}()
	for !done() {
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.False(t, time.Now().After(deadline), "runs still RUNNING after the deadline")
	for _, id := range ids {
		run, err := ss[0].GetRun(ctx, id)
		require.NoError(t, err)
		list, err := ss[0].ListTasks(ctx, id)
		require.NoError(t, err)
		st := map[string]store.TaskStatus{}
		for _, tk := range list {
			st[tk.Name] = tk.Status
		}
		switch run.Status {
		case store.RunCompleted:
			for name, s := range st {
				if name != "@onfailure" {
					require.True(t, s.Resolved(), "%s: %s is %s in a completed run", id, name, s)
				}
			}
			require.Equal(t, store.TaskPending, st["@onfailure"])
		case store.RunFailed:
			require.NotNil(t, run.Failure)
			require.Equal(t, store.TaskFailed, st[run.Failure.Step])
			require.NotEqual(t, store.TaskPending, st["@onfailure"], "%s: onfailure enqueued", id)
		case store.RunCancelled:
			for name, s := range st {
				require.True(t, s.Terminal(), "%s: %s is %s in a cancelled run", id, name, s)
			}
		default:
			t.Fatalf("run %s is %s", id, run.Status)
		}
	}
}

// TestConcurrentKeyedTriggers has 8 workers, each on its own connection,
// create runs with the same 20 idempotency keys at once: each key starts
// exactly one run, and every other trigger of it gets that run's id.
func TestConcurrentKeyedTriggers(t *testing.T) {
	t.Parallel()
	const workers, keys, rounds = 8, 20, 5
	ss := stores(t, workers, nil)
	results := make(chan keyedOutcome, workers*keys*rounds)
	var wg sync.WaitGroup
	for w, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				for _, k := range rng.Perm(keys) {
					o, ok := createKeyed(t, s, fmt.Sprintf("order-%d", k))
					if !ok {
						return
					}
					results <- o
				}
			}
		}()
	}
	wg.Wait()
	close(results)
	requireOneRunAKey(t, ss[0], results, keys, workers*keys*rounds)
}

// keyedOutcome is what one keyed creation returned: its run's id, and the
// run that had its key already (zero when it started its own).
type keyedOutcome struct {
	key          string
	id, existing dag.RunID
}

// createKeyed creates a single-step run with key, and returns what the
// creation says of it; it reports a failure with t.Errorf (it runs on
// goroutines of the test).
func createKeyed(t *testing.T, s store.Store, key string) (keyedOutcome, bool) {
	r := newRun("wf", "tenant", step("a"))
	r.Key = key
	runs := []store.NewRun{r}
	if err := s.CreateRuns(context.Background(), runs); err != nil {
		t.Errorf("create %s: %v", key, err)
		return keyedOutcome{}, false
	}
	return keyedOutcome{key, r.ID, runs[0].Existing}, true
}

// requireOneRunAKey checks the outcomes of total keyed creations of single
// step runs over keys keys: each key started one run, every other creation
// with it was handed that run, and only those runs have a task to claim.
func requireOneRunAKey(t *testing.T, s store.Store, results <-chan keyedOutcome, keys, total int) {
	t.Helper()
	created := map[string]dag.RunID{}
	var dups []keyedOutcome
	for o := range results {
		if o.existing.IsZero() {
			prev, twice := created[o.key]
			require.False(t, twice, "key %s started two runs: %s and %s", o.key, prev, o.id)
			created[o.key] = o.id
			continue
		}
		dups = append(dups, o)
	}
	require.Len(t, created, keys)
	require.Equal(t, total-keys, len(dups), "creations handed the run that had the key")
	for _, o := range dups {
		require.Equal(t, created[o.key], o.existing, "a duplicate of %s gets the run that has the key", o.key)
	}
	claimed, err := s.ClaimTasks(context.Background(), store.ClaimParams{Worker: "w", Limit: 2 * total, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, keys, "only the created runs have tasks")
}
