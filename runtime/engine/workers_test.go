package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// eachStore runs test once on the in-memory store and once on Postgres (a
// fresh schema), and, with DAGEN_TEST_PGBOUNCER=all, once more through
// PgBouncer (see eachStoreAndPgBouncer). Its argument returns a new store
// handle on the same storage each time it is called, as separate worker
// processes have.
func eachStore(t *testing.T, test func(t *testing.T, open func() store.Store)) {
	eachStoreOf(t, pgtest.PgBouncerMatrix(), test)
}

// eachStoreAndPgBouncer is eachStore with the PgBouncer variant always
// run: for the tests where a session that does not last changes what the
// engine does (no LISTEN, cancellations on the heartbeat, leadership by
// lease). The rest of the matrix through PgBouncer doubles the package's
// time for paths these already cover, so make test leaves it to
// DAGEN_TEST_PGBOUNCER=all (docs/testing.md).
func eachStoreAndPgBouncer(t *testing.T, test func(t *testing.T, open func() store.Store)) {
	eachStoreOf(t, true, test)
}

func eachStoreOf(t *testing.T, pgbouncer bool, test func(t *testing.T, open func() store.Store)) {
	t.Run("memstore", func(t *testing.T) {
		t.Parallel()
		st := memstore.New(nil)
		test(t, func() store.Store { return st })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, pgSchema(t))
	})
	// Through PgBouncer in transaction mode with its URL alone: no
	// session lasts, so the stores prepare no named statements, do not
	// listen, and lead by lease.
	if !pgbouncer {
		return
	}
	t.Run("pgbouncer", func(t *testing.T) {
		t.Parallel()
		url := pgtest.StartPgBouncer(t, pgtest.PgBouncerOptions{DefaultPoolSize: 8}).URL(databases.Get(t))
		test(t, func() store.Store {
			st, err := pgstore.Open(context.Background(), url+"&pool_max_conns=8")
			require.NoError(t, err)
			t.Cleanup(st.Close)
			return st
		})
	})
}

// pgSchema borrows a migrated schema and returns a function that opens a
// store on it, a pool of its own each time, as a worker process has.
func pgSchema(t *testing.T) func() store.Store {
	t.Helper()
	schema := schemas.Get(t)
	return func() store.Store {
		st, err := pgstore.New(context.Background(), pgtest.Pool(t, schema, 8), nil)
		require.NoError(t, err)
		return st
	}
}

// notifies reports whether st tells of new work (a store through a
// transaction pooler without a session URL does not).
func notifies(t *testing.T, st store.Store) bool {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := st.Subscribe(ctx)
	if errors.Is(err, pgstore.ErrNoSession) {
		return false
	}
	require.NoError(t, err)
	return true
}

// worker starts an engine named id over st that polls every 5 ms, idle or
// not, and heartbeats, and leads housekeeping, every 20 ms, so
// cancellations reach it and the tasks of lost workers are rescued within
// a test's patience. Its own lease, the
// TTL of its heartbeat, is 2 s: a test machine busy enough to stall a
// worker for a few hundred milliseconds (the race detector, packages
// tested in parallel) must not make a live worker look lost.
func worker(t *testing.T, st store.Store, id string, defs ...*engine.Definition) *engine.Engine {
	t.Helper()
	return workerWith(t, st, engine.Config{
		WorkerID: id, Concurrency: 4, PollInterval: 5 * time.Millisecond, IdlePollInterval: 5 * time.Millisecond,
		Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond,
	}, defs...)
}

// workerWith is worker with its own configuration.
func workerWith(t *testing.T, st store.Store, cfg engine.Config, defs ...*engine.Definition) *engine.Engine {
	t.Helper()
	e, err := engine.New(st, &cfg)
	require.NoError(t, err)
	for _, d := range defs {
		require.NoError(t, e.Register(d))
	}
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e
}

func TestTwoWorkersPollWithoutNotify(t *testing.T) {
	eachStore(t, testTwoWorkersPollWithoutNotify)
}

// testTwoWorkersPollWithoutNotify runs two workers that ignore the store's
// notifications (as behind PgBouncer, where LISTEN does not work): polling
// alone finds the ready tasks and the due timers.
func testTwoWorkersPollWithoutNotify(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var runs [2]atomic.Int64
	var joins atomic.Int64
	mk := func(i int) *engine.Definition {
		count := fn(func(context.Context, int, []string) (string, error) { runs[i].Add(1); return "x", nil })
		return &engine.Definition{Name: "polled", Steps: []engine.Step{
			{Name: "a", Run: count},
			{Name: "nap", Kind: engine.KindSleep, Parents: req("a"), Sleep: func(context.Context, engine.StepInput) (engine.Wake, error) {
				return engine.Wake{Delay: 10 * time.Millisecond}, nil
			}},
			{Name: "b", Parents: req("a"), Run: count},
			{Name: "c", Parents: req("nap"), Run: count},
			{Name: "d", Parents: req("b", "c"), Run: fn(func(context.Context, int, []string) (string, error) {
				joins.Add(1)
				return "d", nil
			})},
		}}
	}
	var stores [2]*spyStore
	var workers [2]*engine.Engine
	for i := range 2 {
		stores[i] = spy(open())
		e, err := engine.New(stores[i], &engine.Config{
			WorkerID: fmt.Sprintf("poller-%d", i), Concurrency: 4, PollInterval: 5 * time.Millisecond,
			Lease: 2 * time.Second, DisableNotify: true,
		})
		require.NoError(t, err)
		require.NoError(t, e.Register(mk(i)))
		require.NoError(t, e.Start(ctx))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = e.Stop(ctx)
		})
		workers[i] = e
	}
	var reqs []engine.TriggerRequest
	for i := range 200 {
		reqs = append(reqs, engine.TriggerRequest{Workflow: "polled", Tenant: "t", Input: i})
	}
	ids, err := workers[0].TriggerMany(ctx, reqs)
	require.NoError(t, err)
	for _, id := range ids {
		res, err := workers[0].Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}
	require.Equal(t, int64(600), runs[0].Load()+runs[1].Load(), "each step ran once across both workers")
	require.Equal(t, int64(200), joins.Load())
	require.NotZero(t, runs[0].Load())
	require.NotZero(t, runs[1].Load())
	for i := range 2 {
		require.Zero(t, stores[i].subs.Load(), "worker %d did not subscribe to notifications", i)
	}
}

func TestCancelReachesStepOnAnotherWorker(t *testing.T) {
	eachStoreAndPgBouncer(t, testCancelReachesStepOnAnotherWorker)
}

func testCancelReachesStepOnAnotherWorker(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	started := make(chan string, 1)
	sawCancel := make(chan error, 1)
	def := &engine.Definition{Name: "remote", Steps: []engine.Step{
		{Name: "block", Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			info, _ := dag.Info(ctx)
			started <- info.RunID.String()
			<-ctx.Done()
			sawCancel <- ctx.Err()
			return nil, ctx.Err()
		}},
	}}
	runner := worker(t, open(), "runner", def)
	// The canceller is another engine on the same store that executes nothing.
	canceller, err := engine.New(open(), &engine.Config{Manual: true})
	require.NoError(t, err)

	id, err := runner.Trigger(ctx, "remote", "t", 0)
	require.NoError(t, err)
	require.Equal(t, id.String(), <-started)
	ok, err := canceller.Cancel(ctx, id)
	require.NoError(t, err)
	require.True(t, ok)
	select {
	case err := <-sawCancel:
		require.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		t.Fatal("the step on the other worker never saw the cancellation")
	}
}

func TestStopPastDeadlineReleasesTasks(t *testing.T) {
	eachStore(t, testStopPastDeadlineReleasesTasks)
}

func testStopPastDeadlineReleasesTasks(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var attempts sync.Map
	stuck := make(chan struct{})
	started := make(chan int, 2)
	def := &engine.Definition{Name: "handoff", Steps: []engine.Step{
		{Name: "s", Retry: engine.RetryPolicy{MaxRetries: 1}, Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			info, _ := dag.Info(ctx)
			attempts.Store(info.Attempt, info)
			started <- info.Attempt
			if info.Attempt == 1 {
				<-stuck // ignores cancellation
				return nil, nil
			}
			return engine.Encode("second worker")
		}},
	}}
	defer close(stuck)
	first, err := engine.New(open(), &engine.Config{WorkerID: "first", PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, first.Register(def))
	require.NoError(t, first.Start(ctx))
	id, err := first.Trigger(ctx, "handoff", "t", 0)
	require.NoError(t, err)
	require.Equal(t, 1, <-started)

	// Stop keeps a tenth of its deadline (up to a second) to release
	// tasks: this deadline leaves room for the hook above and the release,
	// also through PgBouncer on a loaded machine, where a statement is
	// planned at each execution.
	stopCtx, stopCancel := context.WithTimeout(ctx, 5*time.Second)
	defer stopCancel()
	require.ErrorIs(t, first.Stop(stopCtx), context.DeadlineExceeded, "a step that ignores cancellation does not hang Stop")

	second := worker(t, open(), "second", def)
	res, err := second.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "second worker", output(t, res, "s"))
	require.Equal(t, 2, res.Tasks["s"].Attempt, "the released task ran again as attempt 2")
	require.Equal(t, "second", res.Tasks["s"].Worker)
}

func TestSilentWorkerIsRescued(t *testing.T) {
	eachStoreAndPgBouncer(t, testSilentWorkerIsRescued)
}

func testSilentWorkerIsRescued(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := open()
	rec := &recorder{}
	def := &engine.Definition{Name: "lost", Steps: []engine.Step{{Name: "s", Retry: engine.RetryPolicy{MaxRetries: 2}, Run: rec.step("s")}}}
	// A worker claims the task, heartbeats once, then vanishes.
	require.NoError(t, st.CreateRuns(ctx, []store.NewRun{{ID: dag.NewRunID(), Workflow: "lost", Tenant: "t", Input: []byte("0"),
		Tasks: []store.NewTask{{Name: "s", Kind: store.KindStep, MaxAttempts: 3, Signature: def.Signatures()["s"]}}}}))
	_, err := st.Heartbeat(ctx, "ghost", 100*time.Millisecond, nil)
	require.NoError(t, err)
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Worker: "ghost", Limit: 1, Lease: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	live := worker(t, open(), "live", def)
	res, err := live.Wait(ctx, claimed[0].RunID)
	require.NoError(t, err)
	require.Equal(t, 2, res.Tasks["s"].Attempt)
	require.Equal(t, []string{"s"}, rec.ran())
}

func TestTwoWorkersShareAStore(t *testing.T) {
	eachStore(t, testTwoWorkersShareAStore)
}

func testTwoWorkersShareAStore(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var runs [2]atomic.Int64
	var joins atomic.Int64
	mk := func(i int) *engine.Definition {
		count := fn(func(context.Context, int, []string) (string, error) { runs[i].Add(1); return "x", nil })
		return &engine.Definition{Name: "shared", Steps: []engine.Step{
			{Name: "a", Run: count},
			{Name: "b", Parents: req("a"), Run: count},
			{Name: "c", Parents: req("a"), Run: count},
			{Name: "d", Parents: req("b", "c"), Run: fn(func(context.Context, int, []string) (string, error) {
				joins.Add(1)
				return "d", nil
			})},
		}}
	}
	w1 := worker(t, open(), "w1", mk(0))
	worker(t, open(), "w2", mk(1))
	var reqs []engine.TriggerRequest
	for i := range 300 {
		reqs = append(reqs, engine.TriggerRequest{Workflow: "shared", Tenant: "t", Input: i})
	}
	ids, err := w1.TriggerMany(ctx, reqs)
	require.NoError(t, err)
	// Each attempt runs once, on one worker: a step runs again only as a
	// new attempt (a lease lost to a machine stalled past it), so the
	// runs are at least one a task and at most one an attempt. Two
	// workers running one attempt would pass the attempts.
	attempts, joinAttempts := 0, 0
	for _, id := range ids {
		res, err := w1.Wait(ctx, id)
		require.NoError(t, err)
		for _, s := range []string{"a", "b", "c"} {
			attempts += res.Tasks[s].Attempt
		}
		joinAttempts += res.Tasks["d"].Attempt
	}
	ran := runs[0].Load() + runs[1].Load()
	require.GreaterOrEqual(t, ran, int64(900), "each step ran")
	require.LessOrEqual(t, ran, int64(attempts), "no attempt ran twice across both workers")
	require.GreaterOrEqual(t, joins.Load(), int64(300))
	require.LessOrEqual(t, joins.Load(), int64(joinAttempts))
	require.NotZero(t, runs[0].Load())
	require.NotZero(t, runs[1].Load())
}

func TestWorkerWithoutWorkflowsClaimsNothing(t *testing.T) {
	eachStore(t, testWorkerWithoutWorkflowsClaimsNothing)
}

func testWorkerWithoutWorkflowsClaimsNothing(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := &recorder{}
	def := &engine.Definition{Name: "idle", Steps: []engine.Step{{Name: "a", Run: rec.step("a")}}}
	idle := spy(open())
	worker(t, idle, "idle") // knows no workflow
	owner, err := engine.New(open(), &engine.Config{Manual: true, WorkerID: "owner"})
	require.NoError(t, err)
	require.NoError(t, owner.Register(def))
	id, err := owner.Trigger(ctx, "idle", "t", 0)
	require.NoError(t, err)

	require.NoError(t, waitRounds(ctx, &idle.polls, 3), "the idle worker keeps polling")
	res, err := owner.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.TaskQueued, res.Tasks["a"].Status, "a worker without workflows claims nothing")

	res, err = owner.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	require.Equal(t, 1, res.Tasks["a"].Attempt)
	require.Equal(t, []string{"a"}, rec.ran())
}

func TestDrainLongerThanLeaseRunsOnce(t *testing.T) {
	eachStore(t, testDrainLongerThanLeaseRunsOnce)
}

// testDrainLongerThanLeaseRunsOnce stops a worker while its step runs past
// the lease, with another worker leading housekeeping: the stopping worker
// keeps heartbeating while it drains, so its task is not rescued and run
// again elsewhere.
func testDrainLongerThanLeaseRunsOnce(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const lease = 500 * time.Millisecond
	var runs atomic.Int64
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	def := &engine.Definition{Name: "drain-long", Steps: []engine.Step{
		{Name: "s", Retry: engine.RetryPolicy{MaxRetries: 3}, Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			runs.Add(1)
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return engine.Encode("drained")
		}},
	}}

	// The second worker leads from the start, and knows no workflow yet,
	// so the first worker runs the step.
	leaderStore := spy(open())
	leader := worker(t, leaderStore, "leader")
	require.Eventually(t, leader.Leading, 10*time.Second, 5*time.Millisecond)

	first, err := engine.New(open(), &engine.Config{
		WorkerID: "first", PollInterval: 5 * time.Millisecond, Lease: lease, HeartbeatInterval: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, first.Register(def))
	require.NoError(t, first.Start(ctx))
	id, err := first.Trigger(ctx, "drain-long", "t", 0)
	require.NoError(t, err)
	<-started
	// Now the leader could run the step too, if the task came back.
	require.NoError(t, leader.Register(def))

	stopped := make(chan error, 1)
	stopStart := time.Now()
	go func() { stopped <- first.Stop(ctx) }()
	// Let the drain outlast the lease twice over, then wait for two more
	// rescue sweeps by the leader: without heartbeats the task is lost by then.
	select {
	case <-time.After(time.Until(stopStart.Add(2 * lease))):
	case err := <-stopped:
		t.Fatalf("Stop returned before the step finished: %v", err)
	}
	require.NoError(t, waitRounds(ctx, &leaderStore.sweeps, 2))
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned before the step finished: %v", err)
	default:
	}
	close(release)
	require.NoError(t, <-stopped)

	res, err := leader.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "drained", output(t, res, "s"))
	require.Equal(t, 1, res.Tasks["s"].Attempt, "the draining worker kept its task")
	require.Equal(t, "first", res.Tasks["s"].Worker)
	require.Equal(t, int64(1), runs.Load(), "the step ran exactly once")
}

func TestStopPastDeadlineSpendsNoAttempt(t *testing.T) {
	eachStore(t, testStopPastDeadlineSpendsNoAttempt)
}

// testStopPastDeadlineSpendsNoAttempt stops a worker past its deadline
// while a step without retries runs: the step sees its ctx cancelled and
// returns the error, which is the engine's doing, not the step's failure.
// The task goes to another worker and the run completes.
func testStopPastDeadlineSpendsNoAttempt(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	started := make(chan int, 2)
	firstStore := spy(open())
	var storedBefore atomic.Int64
	returned := make(chan struct{})
	def := &engine.Definition{Name: "no-retry", Steps: []engine.Step{
		{Name: "s", Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			info, _ := dag.Info(ctx)
			started <- info.Attempt
			if info.Attempt == 1 {
				<-ctx.Done()
				storedBefore.Store(firstStore.stores.Load())
				close(returned)
				return nil, ctx.Err()
			}
			return engine.Encode("second worker")
		}},
	}}
	// Give the stopping worker the chance to store the cancelled attempt's
	// result before it releases its tasks: the order in which that result
	// would do harm. (A worker that stores nothing is waited for in vain
	// for a moment.)
	firstStore.beforeRetire = func() {
		<-returned
		give := time.After(100 * time.Millisecond) // within Stop's reserve for releasing tasks
		for firstStore.stores.Load() == storedBefore.Load() {
			select {
			case <-give:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}
	first, err := engine.New(firstStore, &engine.Config{WorkerID: "first", PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, first.Register(def))
	require.NoError(t, first.Start(ctx))
	id, err := first.Trigger(ctx, "no-retry", "t", 0)
	require.NoError(t, err)
	require.Equal(t, 1, <-started)

	// Stop keeps a tenth of its deadline (up to a second) to release
	// tasks: this deadline leaves room for the hook above and the release,
	// also through PgBouncer on a loaded machine, where a statement is
	// planned at each execution.
	stopCtx, stopCancel := context.WithTimeout(ctx, 5*time.Second)
	defer stopCancel()
	require.ErrorIs(t, first.Stop(stopCtx), context.DeadlineExceeded)

	second := worker(t, open(), "second", def)
	res, err := second.Wait(ctx, id)
	require.NoError(t, err, "a step cut short by Stop does not fail its run")
	require.Equal(t, store.RunCompleted, res.Status)
	require.Equal(t, "second worker", output(t, res, "s"))
	require.Equal(t, 2, res.Tasks["s"].Attempt)
	events, err := second.Events(ctx, id)
	require.NoError(t, err)
	released := false
	for _, ev := range events {
		require.NotContains(t, []store.EventType{store.EventRetrying, store.EventFailed}, ev.Type,
			"the cut-short attempt is not stored as a failure: %+v", ev)
		released = released || (ev.Type == store.EventRescued && ev.Detail == store.ReleasedDetail)
	}
	require.True(t, released, "the task was released by the stopping worker")
}

func TestPollerClaimsBeforeFiringTimers(t *testing.T) {
	eachStore(t, testPollerClaimsBeforeFiringTimers)
}

// testPollerClaimsBeforeFiringTimers checks the order of a poller round: a
// wake-up is most often for a task just enqueued, so the round claims
// first and fires timers after, never the other way round.
func testPollerClaimsBeforeFiringTimers(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := &recorder{}
	def := &engine.Definition{Name: "order", Steps: []engine.Step{{Name: "a", Run: rec.step("a")}}}
	st := spy(open())
	e := worker(t, st, "poller", def)
	require.NoError(t, waitRounds(ctx, &st.polls, 5))
	_, err := e.Run(ctx, "order", "t", 0)
	require.NoError(t, err)
	require.NoError(t, waitRounds(ctx, &st.polls, 2))

	calls := st.pollerCalls()
	require.Equal(t, "claim", calls[0], "a round starts with a claim: %v", calls)
	for i, c := range calls {
		if c == "timers" {
			require.Equal(t, "claim", calls[i-1], "timers fired without a claim before them, at call %d: %v", i, calls)
		}
	}
}

func TestConcurrencyCountsUnstoredResults(t *testing.T) {
	eachStore(t, testConcurrencyCountsUnstoredResults)
}

// testConcurrencyCountsUnstoredResults holds every completion back: the
// worker (Concurrency 4) executes four steps and, while their results wait
// for the store, claims no more, since it holds those four tasks still.
func testConcurrencyCountsUnstoredResults(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := &recorder{}
	def := &engine.Definition{Name: "held", Steps: []engine.Step{{Name: "a", Run: rec.step("a")}}}
	st := spy(open())
	st.holdCompletions = make(chan struct{})
	owner, err := engine.New(open(), &engine.Config{Manual: true, WorkerID: "owner"})
	require.NoError(t, err)
	require.NoError(t, owner.Register(def))
	var ids []dag.RunID
	for range 10 {
		id, err := owner.Trigger(ctx, "held", "t", 0)
		require.NoError(t, err)
		ids = append(ids, id)
	}

	worker(t, st, "w", def) // Concurrency 4
	require.Eventually(t, func() bool { return len(rec.ran()) == 4 }, 10*time.Second, time.Millisecond)
	require.NoError(t, waitRounds(ctx, &st.polls, 5))
	require.Equal(t, int64(4), st.claimed.Load(), "claimed more tasks while four results waited for the store")
	require.Len(t, rec.ran(), 4)

	close(st.holdCompletions)
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if res, err := owner.Result(ctx, id); err != nil || res.Status != store.RunCompleted {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "the held results were stored and the rest ran")
	require.Len(t, rec.ran(), 10)
}

// TestIdleWorkerBacksOff: a worker whose polls find nothing polls less
// and less often, up to IdlePollInterval, so an idle fleet does not load
// the database; new work still starts, here with notifications off, and
// the worker is back to PollInterval while it finds work.
func TestIdleWorkerBacksOff(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		def := &engine.Definition{Name: "one", Steps: []engine.Step{
			{Name: "a", Run: fn(func(context.Context, int, []string) (string, error) { return "a", nil })},
		}}
		st := spy(open())
		e := workerWith(t, st, engine.Config{
			WorkerID: "idle", Concurrency: 4, PollInterval: 5 * time.Millisecond, IdlePollInterval: 200 * time.Millisecond,
			DisableNotify: true, Lease: 2 * time.Second, HeartbeatInterval: time.Second,
		}, def)
		claims := func() int {
			n := 0
			for _, c := range st.pollerCalls() {
				if c == "claim" {
					n++
				}
			}
			return n
		}
		before := claims()
		time.Sleep(2 * time.Second)
		// Polling every PollInterval would make about 400 claims in 2 s;
		// backed off to 200 ms, about 10 and the ramp.
		require.Less(t, claims()-before, 40, "an idle worker kept polling every PollInterval")

		owner, err := engine.New(open(), &engine.Config{Manual: true, WorkerID: "owner"})
		require.NoError(t, err)
		require.NoError(t, owner.Register(def))
		id, err := owner.Trigger(ctx, "one", "t", 0)
		require.NoError(t, err)
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	})
}
