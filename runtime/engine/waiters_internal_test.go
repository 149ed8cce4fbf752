package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// ReadCounter is a memstore that counts the reads of runs and of their
// statuses (the waiter tests, here and in package engine_test).
type ReadCounter struct {
	*memstore.Store
	Reads, Statuses atomic.Int64
}

func (s *ReadCounter) ReadRun(ctx context.Context, id dag.RunID) (store.Run, []store.Task, error) {
	s.Reads.Add(1)
	return s.Store.ReadRun(ctx, id)
}

func (s *ReadCounter) GetRun(ctx context.Context, id dag.RunID) (store.Run, error) {
	s.Reads.Add(1)
	return s.Store.GetRun(ctx, id)
}

func (s *ReadCounter) RunStatus(ctx context.Context, id dag.RunID) (store.RunStatus, error) {
	s.Statuses.Add(1)
	return s.Store.RunStatus(ctx, id)
}

// heldStep is workflow wf of one step, a, that returns once release is
// closed.
func heldStep(release <-chan struct{}) *Definition {
	return &Definition{Name: "wf", Steps: []Step{{
		Name: "a",
		Run: func(context.Context, StepInput) ([]byte, error) {
			<-release
			return []byte(`"a"`), nil
		},
	}}}
}

// TestWaitDescheduledAfterRegisteringReadsNothing is a Wait descheduled
// right after it registered its waiter, while its run's step, held here,
// finishes the run. Wait learns whether a task of the run was held as it
// registered (addWaiter), not after: checked after, the task was gone, so
// Wait read the run's status, then the run, though the completion had
// handed the run to its waiter (a CI flake under load).
func TestWaitDescheduledAfterRegisteringReadsNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mem := memstore.New(nil)
	st := &ReadCounter{Store: mem}
	release := make(chan struct{})
	e, err := New(st, &Config{WorkerID: "w1", Concurrency: 4, PollInterval: time.Minute})
	require.NoError(t, err)
	require.NoError(t, e.Register(heldStep(release)))
	e.waitRegistered = func(id dag.RunID) {
		// While Wait is away, the held step finishes the run.
		close(release)
		require.Eventually(t, func() bool {
			s, err := mem.RunStatus(ctx, id)
			return err == nil && s.Terminal()
		}, 10*time.Second, time.Millisecond)
	}
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})

	id, err := e.Trigger(ctx, "wf", "t", 1)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.holdsTaskOf(id) }, 10*time.Second, time.Millisecond)
	reads, statuses := st.Reads.Load(), st.Statuses.Load()
	res, err := e.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	require.Equal(t, reads, st.Reads.Load(), "Wait took the run its completion read back, and read nothing")
	require.Equal(t, statuses, st.Statuses.Load(), "nor the status: a task of the run was held as Wait registered")
	require.Zero(t, e.Waiters(id), "no waiter is left registered")
}

// TestWaitTakesNoReadBackOfARunningRun: a completion that ended a run
// reads it back after its commit, and a retry may have made the run
// RUNNING again in between (TestChildRuns' "retry from the step" saw it
// once, under load: Wait after Retry returned the retried run, RUNNING,
// with no error). A waiter handed such a read back keeps waiting, and
// returns the run's end.
func TestWaitTakesNoReadBackOfARunningRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := memstore.New(nil)
	release := make(chan struct{})
	e, err := New(st, &Config{WorkerID: "w1", Concurrency: 4, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Register(heldStep(release)))
	registered := make(chan struct{})
	var once sync.Once
	e.waitRegistered = func(dag.RunID) { once.Do(func() { close(registered) }) } // it registers again after the read back
	require.NoError(t, e.Start(ctx))
	released := false
	defer func() {
		if !released {
			close(release) // a failure below must not leave Stop waiting for the step
		}
		_ = e.Stop(context.Background())
	}()
	id, err := e.Trigger(ctx, "wf", "t", 1)
	require.NoError(t, err)
	type waited struct {
		res *RunResult
		err error
	}
	done := make(chan waited, 1)
	go func() {
		res, err := e.Wait(ctx, id)
		done <- waited{res, err}
	}()
	<-registered
	run, tasks, err := st.ReadRun(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, run.Status)
	e.finished(id, &store.FinishedRun{Run: run, Tasks: tasks}) // a read back taken after a retry
	select {
	case w := <-done:
		t.Fatalf("Wait returned a run that is %s (err %v)", w.res.Status, w.err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	released = true
	w := <-done
	require.NoError(t, w.err)
	require.Equal(t, store.RunCompleted, w.res.Status)
}
