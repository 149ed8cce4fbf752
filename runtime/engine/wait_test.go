package engine_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// readSpy wraps a store and counts the reads of whole runs and of
// statuses, and the bytes of input they returned.
type readSpy struct {
	store.Store
	getRuns, readRuns, listTasks, statuses atomic.Int64
	inputBytes                             atomic.Int64
}

func (s *readSpy) GetRun(ctx context.Context, id dag.RunID) (store.Run, error) {
	s.getRuns.Add(1)
	run, err := s.Store.GetRun(ctx, id)
	s.inputBytes.Add(int64(len(run.Input)))
	return run, err
}

func (s *readSpy) ListTasks(ctx context.Context, id dag.RunID) ([]store.Task, error) {
	s.listTasks.Add(1)
	return s.Store.ListTasks(ctx, id)
}

func (s *readSpy) ReadRun(ctx context.Context, id dag.RunID) (store.Run, []store.Task, error) {
	s.readRuns.Add(1)
	run, tasks, err := s.Store.ReadRun(ctx, id)
	s.inputBytes.Add(int64(len(run.Input)))
	return run, tasks, err
}

func (s *readSpy) RunStatus(ctx context.Context, id dag.RunID) (store.RunStatus, error) {
	s.statuses.Add(1)
	return s.Store.RunStatus(ctx, id)
}

// TestWaitReadsTheInputOnce waits for runs with a large input whose step
// takes many polls: the waiter polls the run's status, and reads the run,
// input included, once, when it is over. So does a manual engine's. A
// waiter woken by its own engine finishing the run reads it at most once:
// not at all when the completion that finished it read it back
// (TaskResult.ReturnRun; see TestWaitTakesTheRunFromItsCompletion), once
// when a poll of the status saw it finished first.
func TestWaitReadsTheInputOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		const size = 4 << 20
		input := string(bytes.Repeat([]byte("x"), size))
		slow := func(d time.Duration) func(context.Context, engine.StepInput) ([]byte, error) {
			return func(ctx context.Context, si engine.StepInput) ([]byte, error) {
				time.Sleep(d)
				return engine.Encode(len(si.Input))
			}
		}
		// Each case has a workflow of its own: the workers of the others
		// on the store do not claim its steps.
		def := func(name string) *engine.Definition {
			return &engine.Definition{Name: name, Steps: []engine.Step{
				{Name: "a", Run: slow(500 * time.Millisecond)},
				{Name: "b", Parents: req("a"), Run: slow(500 * time.Millisecond)},
			}}
		}
		check := func(name string, spy *readSpy, res *engine.RunResult, reads int64) {
			t.Helper()
			t.Logf("%s: GetRun %d, ReadRun %d, ListTasks %d, RunStatus %d; input bytes read %d (input %d)", name,
				spy.getRuns.Load(), spy.readRuns.Load(), spy.listTasks.Load(), spy.statuses.Load(), spy.inputBytes.Load(), size)
			require.Len(t, res.Tasks, 2, name)
			require.LessOrEqual(t, spy.inputBytes.Load(), int64(size+2), "%s: the waiter read the input at most once", name)
			require.Equal(t, reads, spy.getRuns.Load()+spy.readRuns.Load(), "%s: the reads of the run", name)
		}
		checkAtMostOnce := func(name string, spy *readSpy, res *engine.RunResult) {
			t.Helper()
			check(name, spy, res, min(spy.getRuns.Load()+spy.readRuns.Load(), 1))
		}

		// The worker executes the steps; the waiter, another engine,
		// waits for them and is woken by nothing but its polls.
		for _, cancelIt := range []bool{false, true} {
			name := map[bool]string{false: "polled", true: "polled-cancelled"}[cancelIt]
			worker := worker(t, open(), "worker-"+name, def(name))
			spy := &readSpy{Store: open()}
			waiter, err := engine.New(spy, &engine.Config{WorkerID: "waiter", PollInterval: 10 * time.Millisecond})
			require.NoError(t, err)
			id, err := worker.Trigger(ctx, name, "t", input)
			require.NoError(t, err)
			if cancelIt {
				time.AfterFunc(700*time.Millisecond, func() { _, _ = worker.Cancel(ctx, id) })
			}
			res, err := waiter.Wait(ctx, id)
			if cancelIt {
				require.ErrorIs(t, err, engine.ErrRunCancelled)
			} else {
				require.NoError(t, err)
				require.Equal(t, store.RunCompleted, res.Status)
			}
			check(name, spy, res, 1)
		}

		// The waiter's engine executes the steps: it is woken.
		spy := &readSpy{Store: open()}
		e, err := engine.New(spy, &engine.Config{WorkerID: "woken", PollInterval: 10 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, e.Register(def("woken")))
		require.NoError(t, e.Start(ctx))
		defer func() { _ = e.Stop(ctx) }()
		res, err := e.Run(ctx, "woken", "t", input)
		require.NoError(t, err)
		checkAtMostOnce("woken", spy, res)

		// A manual engine polls between its rounds of work.
		spy = &readSpy{Store: open()}
		manual, err := engine.New(spy, &engine.Config{WorkerID: "manual", Manual: true})
		require.NoError(t, err)
		require.NoError(t, manual.Register(def("manual")))
		res, err = manual.Run(ctx, "manual", "t", input)
		require.NoError(t, err)
		check("manual", spy, res, 1)
	})
}
