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

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// starterSpy is a spyStore that counts the steps each path hands the
// worker: started by StartRuns, or claimed from the queue.
type starterSpy struct {
	*spyStore
	started atomic.Int64 // steps StartRuns claimed
	// loseAnswer makes StartRuns fail after its transaction committed, as
	// when the caller's context ends while the answer is on its way.
	loseAnswer bool
	lastRun    atomic.Value // dag.RunID: the first run of the last StartRuns
}

func (s *starterSpy) StartRuns(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	s.lastRun.Store(runs[0].ID)
	tasks, err := s.Store.StartRuns(ctx, runs, p)
	if err == nil && s.loseAnswer {
		return nil, errors.New("connection reset: answer lost")
	}
	s.started.Add(int64(len(tasks)))
	return tasks, err
}

// gatedFlow's one step waits for release, counting how many run at once.
func gatedFlow(release <-chan struct{}, running, most *atomic.Int64) *engine.Definition {
	return &engine.Definition{Name: "gated", Steps: []engine.Step{{Name: "only", Run: fn(func(ctx context.Context, in int, _ []string) (string, error) {
		keepMost(most, running.Add(1))
		defer running.Add(-1)
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return fmt.Sprint(in), nil
	})}}}
}

func TestEagerStart(t *testing.T) {
	eachStore(t, testEagerStart)
}

// testEagerStart triggers runs on a started engine: while it has free
// slots, their first steps start here without a claim from the queue; once
// its slots are full, runs go through the queue; and never do more steps
// run at once than Concurrency.
func testEagerStart(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := &starterSpy{spyStore: spy(open())}
	release := make(chan struct{})
	var running, most atomic.Int64
	e := quietWorker(t, st, gatedFlow(release, &running, &most))

	var ids []dag.RunID
	for i := range 6 {
		id, err := e.Trigger(ctx, "gated", "t", i)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	require.Equal(t, int64(4), st.started.Load(), "the first four runs start here, one free slot each")
	require.Eventually(t, func() bool { return running.Load() == 4 }, 10*time.Second, time.Millisecond)
	require.Zero(t, st.claimed.Load(), "no free slot is left for the poller")

	close(release)
	for i, id := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), output(t, res, "only"))
	}
	require.Equal(t, int64(2), st.claimed.Load(), "the last two went through the queue")
	require.LessOrEqual(t, most.Load(), int64(4), "more steps ran at once than Concurrency")

	events, err := e.Events(ctx, ids[0])
	require.NoError(t, err)
	var types []store.EventType
	for _, ev := range events {
		types = append(types, ev.Type)
	}
	require.Equal(t, []store.EventType{store.EventQueued, store.EventStarted, store.EventCompleted}, types,
		"a started step logs what a claimed one does")
}

// quietWorker starts an engine of Concurrency 4 whose poller claims only
// when woken, once its first round is over: while it claims, the poller
// holds the free slots, and a trigger then finds none.
func quietWorker(t *testing.T, st *starterSpy, def *engine.Definition) *engine.Engine {
	t.Helper()
	ctx := context.Background()
	e, err := engine.New(st, &engine.Config{Concurrency: 4, PollInterval: time.Hour, DisableNotify: true})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
	})
	require.Eventually(t, func() bool { return st.polls.Load() >= 1 }, 10*time.Second, time.Millisecond,
		"the poller's first round")
	return e
}

// TestEagerStartDisabled checks that DisableEagerStart sends every run
// through the queue.
func TestEagerStartDisabled(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st := &starterSpy{spyStore: spy(open())}
		e, err := engine.New(st, &engine.Config{Concurrency: 4, PollInterval: 5 * time.Millisecond, DisableEagerStart: true})
		require.NoError(t, err)
		require.NoError(t, e.Register(echoFlow()))
		require.NoError(t, e.Start(ctx))
		defer func() { require.NoError(t, e.Stop(ctx)) }()
		for i := range 3 {
			res, err := e.Run(ctx, "echo", "t", i)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint(i), output(t, res, "only"))
		}
		require.Zero(t, st.started.Load())
		require.Equal(t, int64(3), st.claimed.Load())
	})
}

func echoFlow() *engine.Definition {
	return &engine.Definition{Name: "echo", Steps: []engine.Step{{Name: "only", Run: fn(func(_ context.Context, in int, _ []string) (string, error) {
		return fmt.Sprint(in), nil
	})}}}
}

func TestEagerStartRecoversALostAnswer(t *testing.T) {
	eachStore(t, testEagerStartRecoversALostAnswer)
}

// testEagerStartRecoversALostAnswer makes StartRuns commit and then fail,
// as when the answer is lost: Trigger reports the error, but the step it
// started here is found and run rather than left RUNNING for as long as
// the worker heartbeats.
func testEagerStartRecoversALostAnswer(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := &starterSpy{spyStore: spy(open()), loseAnswer: true}
	e := quietWorker(t, st, echoFlow())
	_, err := e.Trigger(ctx, "echo", "t", 7)
	require.ErrorContains(t, err, "answer lost")

	res, err := e.Wait(ctx, st.lastRun.Load().(dag.RunID))
	require.NoError(t, err, "the started step ran and its result was stored")
	require.Equal(t, "7", output(t, res, "only"))
	require.Zero(t, st.claimed.Load(), "it was never queued")
}

// TestTriggersRaceStop triggers runs while the engine stops: a trigger
// that started steps here is waited for, nothing panics, and every run
// finishes on a second worker.
func TestTriggersRaceStop(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		first := worker(t, open(), "first", echoFlow())
		var mu sync.Mutex
		var ids []dag.RunID
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 25 {
					id, err := first.Trigger(ctx, "echo", "t", g*100+i)
					if !assertNoError(t, err) {
						return
					}
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				}
			})
		}
		time.Sleep(5 * time.Millisecond)
		require.NoError(t, first.Stop(ctx))
		wg.Wait()

		second := worker(t, open(), "second", echoFlow())
		for _, id := range ids {
			_, err := second.Wait(ctx, id)
			require.NoError(t, err)
		}
		require.Len(t, ids, 100)
	})
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

func TestEagerStartAcrossWorkersRunsEachStepOnce(t *testing.T) {
	eachStore(t, testEagerStartAcrossWorkersRunsEachStepOnce)
}

// testEagerStartAcrossWorkersRunsEachStepOnce has four workers trigger runs
// from many goroutines at once, over a few tenants, while all of them work
// the queue: a root is started by the worker that creates it or claimed
// from the queue, never both, and every step runs exactly once.
func testEagerStartAcrossWorkersRunsEachStepOnce(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	ran := map[string]int{} // run/step -> executions
	count := func(ctx context.Context, in int, _ []string) (string, error) {
		info, _ := dag.Info(ctx)
		mu.Lock()
		ran[info.RunID.String()+"/"+info.Step]++
		mu.Unlock()
		return fmt.Sprint(in), nil
	}
	def := &engine.Definition{Name: "twice", Steps: []engine.Step{
		{Name: "a", Run: fn(count)},
		{Name: "b", Run: fn(count)}, // a second root: queued, one root a tenant starts
		{Name: "c", Parents: req("a", "b"), Run: fn(count)},
	}}
	spies := make([]*starterSpy, 4)
	workers := make([]*engine.Engine, 4)
	for i := range workers {
		spies[i] = &starterSpy{spyStore: spy(open())}
		workers[i] = worker(t, spies[i], fmt.Sprintf("w%d", i), def)
	}
	var ids sync.Map
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			e := workers[g%len(workers)]
			for i := range 25 {
				id, err := e.Trigger(ctx, "twice", fmt.Sprintf("t%d", (g+i)%3), g*100+i)
				if !assertNoError(t, err) {
					return
				}
				ids.Store(id, true)
			}
		})
	}
	wg.Wait()
	n := 0
	ids.Range(func(k, _ any) bool {
		res, err := workers[0].Wait(ctx, k.(dag.RunID))
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
		n++
		return true
	})
	require.Equal(t, 200, n)
	mu.Lock()
	require.Len(t, ran, 600)
	for k, times := range ran {
		require.Equal(t, 1, times, "%s ran %d times", k, times)
	}
	mu.Unlock()
	// The burst must have exercised both paths to prove anything, but how
	// many roots it started eagerly depends on the machine: a worker whose
	// poll holds its free slots, or a tenant with a backlog in the fair
	// queue, rightly declines. Now the queue is empty: a trigger for a
	// tenant with nothing queued starts its root unless the worker happens
	// to be polling at that instant, so a few tries settle it.
	started := func() (n int64) {
		for _, s := range spies {
			n += s.started.Load()
		}
		return n
	}
	for i := 0; started() == 0 && i < 100; i++ {
		id, err := workers[0].Trigger(ctx, "twice", fmt.Sprintf("idle%d", i), i)
		require.NoError(t, err)
		res, err := workers[0].Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}
	require.Positive(t, started(), "some roots started where they were triggered")
}
