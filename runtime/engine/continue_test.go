package engine_test

import (
	"context"
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

// TestChainsContinueOnTheWorker runs chains on four workers sharing a
// store that continues (store.Continuer): a step's completion starts the
// next step on the worker that ran it. Every step runs exactly once, gets
// its parent's output, and most steps after the first never enter the
// queue: their STARTED event has the time of their QUEUED event, both
// logged by the unit that stored the parent's result.
func TestChainsContinueOnTheWorker(t *testing.T) {
	eachStore(t, testChainsContinueOnTheWorker)
}

func testChainsContinueOnTheWorker(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const runs, length = 200, 5
	var mu sync.Mutex
	ran := map[string]int{} // by run input and step
	steps := make([]engine.Step, length)
	for i := range steps {
		name := fmt.Sprintf("s%d", i)
		steps[i] = engine.Step{Name: name, Run: fn(func(_ context.Context, in int, parents []string) (string, error) {
			if i > 0 && parents[0] != fmt.Sprintf("%d/s%d", in, i-1) {
				return "", fmt.Errorf("run %d step %s: parent output %q", in, name, parents[0])
			}
			mu.Lock()
			ran[fmt.Sprintf("%d/%s", in, name)]++
			mu.Unlock()
			return fmt.Sprintf("%d/%s", in, name), nil
		})}
		if i > 0 {
			steps[i].Parents = req(fmt.Sprintf("s%d", i-1))
		}
	}
	def := func() *engine.Definition { return &engine.Definition{Name: "chain", Steps: steps} }
	var workers []*engine.Engine
	for i := range 4 {
		workers = append(workers, worker(t, open(), fmt.Sprintf("w%d", i), def()))
	}
	var reqs []engine.TriggerRequest
	for i := range runs {
		reqs = append(reqs, engine.TriggerRequest{Workflow: "chain", Tenant: "t", Input: i})
	}
	ids, err := workers[0].TriggerMany(ctx, reqs)
	require.NoError(t, err)
	continued := 0
	for _, id := range ids {
		res, err := workers[0].Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
		continued += continuedSteps(t, ctx, workers[0], id)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, ran, runs*length)
	for k, n := range ran {
		require.Equal(t, 1, n, "%s ran %d times", k, n)
	}
	t.Logf("continued %d of %d", continued, runs*(length-1))
	require.Greater(t, continued, runs*(length-1)/2, "most steps after the first continue on their worker")
}

// continuedSteps counts the steps of run id after the first started by
// the unit that made them ready (see startedWith).
func continuedSteps(t *testing.T, ctx context.Context, e *engine.Engine, id dag.RunID) int {
	t.Helper()
	n := 0
	for step, with := range startedWith(t, ctx, e, id) {
		if with && step != "s0" {
			n++
		}
	}
	return n
}

// TestFanOutsStartInFreeSlots runs fan-outs (a root, twenty children
// that have only the root for parent, a join) on one worker with free
// slots: the completion that stores the root's result starts every child
// on the worker, where it used to start one (the slot the root frees) and
// enqueue the rest for the next claim. Then fan-outs queued before the
// worker starts: the claims that take their roots keep slots for their
// children, which their completions start. Then many fan-outs at once on a
// worker of few slots: every step runs once with its parents' outputs,
// and no more steps execute at once than the worker's Concurrency.
func TestFanOutsStartInFreeSlots(t *testing.T) {
	eachStore(t, testFanOutsStartInFreeSlots)
}

func testFanOutsStartInFreeSlots(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const width = 20
	var mu sync.Mutex
	ran := map[string]int{}    // by run input and step
	var now, most atomic.Int64 // steps executing, and the most seen at once
	step := func(name string, check func(in int, parents []string) error) engine.Step {
		return engine.Step{Name: name, Run: fn(func(_ context.Context, in int, parents []string) (string, error) {
			keepMost(&most, now.Add(1))
			defer now.Add(-1)
			time.Sleep(time.Millisecond) // long enough for steps to overlap
			if err := check(in, parents); err != nil {
				return "", err
			}
			mu.Lock()
			ran[fmt.Sprintf("%d/%s", in, name)]++
			mu.Unlock()
			return fmt.Sprintf("%d/%s", in, name), nil
		})}
	}
	def := &engine.Definition{Name: "fan", Steps: []engine.Step{step("root", func(int, []string) error { return nil })}}
	var children []string
	for i := range width {
		name := fmt.Sprintf("c%02d", i)
		children = append(children, name)
		s := step(name, func(in int, parents []string) error {
			if want := fmt.Sprintf("%d/root", in); len(parents) != 1 || parents[0] != want {
				return fmt.Errorf("run %d step %s: parents %q, want [%s]", in, name, parents, want)
			}
			return nil
		})
		s.Parents = req("root")
		def.Steps = append(def.Steps, s)
	}
	join := step("join", func(in int, parents []string) error {
		if len(parents) != width {
			return fmt.Errorf("run %d join: %d parents", in, len(parents))
		}
		for i, p := range parents {
			if want := fmt.Sprintf("%d/%s", in, children[i]); p != want {
				return fmt.Errorf("run %d join: parent %d is %q, want %q", in, i, p, want)
			}
		}
		return nil
	})
	join.Parents = req(children...)
	def.Steps = append(def.Steps, join)

	// One at a time, on a worker whose 64 slots are free. Its claims take
	// 16 at most: a claim reserves its slots while it runs, and a claim of
	// up to 64 (BatchSize's default) would reserve them all.
	free := workerWith(t, open(), engine.Config{
		WorkerID: "free", Concurrency: 64, BatchSize: 16, PollInterval: 5 * time.Millisecond, IdlePollInterval: 5 * time.Millisecond,
		Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond,
	}, def)
	const alone = 5
	for i := range alone {
		id, err := free.Trigger(ctx, "fan", "t", i)
		require.NoError(t, err)
		res, err := free.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status, "run %d: %+v", i, res.Failure)
		started := startedWith(t, ctx, free, id)
		for _, c := range children {
			require.True(t, started[c], "run %d: child %s waited in the queue: its root's completion started %d of %d children", i, c, countTrue(started, children), width)
		}
	}
	require.NoError(t, free.Stop(ctx))

	// Runs queued before a worker starts: its claims keep slots for the
	// children of the roots they take (store.ClaimParams.Extra), so the
	// roots' completions start the children here.
	queuer, err := engine.New(open(), &engine.Config{WorkerID: "queuer", Logger: quietLogger()})
	require.NoError(t, err)
	require.NoError(t, queuer.Register(def))
	const queued = 30
	var reqs []engine.TriggerRequest
	for i := range queued {
		reqs = append(reqs, engine.TriggerRequest{Workflow: "fan", Tenant: "t", Input: alone + i})
	}
	ids, err := queuer.TriggerMany(ctx, reqs)
	require.NoError(t, err)
	drainer := workerWith(t, open(), engine.Config{
		WorkerID: "drainer", Concurrency: 64, PollInterval: 5 * time.Millisecond, IdlePollInterval: 5 * time.Millisecond,
		Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond,
	}, def)
	withRoot := 0
	for i, id := range ids {
		res, err := drainer.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status, "run %d: %+v", i, res.Failure)
		withRoot += countTrue(startedWith(t, ctx, drainer, id), children)
	}
	t.Logf("%d of %d children of queued runs started by their root's completion", withRoot, queued*width)
	require.GreaterOrEqual(t, withRoot, queued*width*9/10, "children of queued runs started by their root's completion")
	require.NoError(t, drainer.Stop(ctx))

	// Many at once, on a worker of 8 slots.
	most.Store(0)
	const runs, slots = 40, 8
	busy := workerWith(t, open(), engine.Config{
		WorkerID: "busy", Concurrency: slots, PollInterval: 5 * time.Millisecond, IdlePollInterval: 5 * time.Millisecond,
		Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond,
	}, def)
	reqs = reqs[:0]
	for i := range runs {
		reqs = append(reqs, engine.TriggerRequest{Workflow: "fan", Tenant: "t", Input: alone + queued + i})
	}
	ids, err = busy.TriggerMany(ctx, reqs)
	require.NoError(t, err)
	for _, id := range ids {
		res, err := busy.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status, "%+v", res.Failure)
	}
	require.LessOrEqual(t, most.Load(), int64(slots), "steps executing at once on a worker of %d slots", slots)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, ran, (alone+queued+runs)*(width+2))
	for k, n := range ran {
		require.Equal(t, 1, n, "%s ran %d times", k, n)
	}
}

// startedWith reports, by step, whether run id's step was started by the
// unit that made it ready: STARTED at the time of its QUEUED, in the same
// round.
func startedWith(t testing.TB, ctx context.Context, e *engine.Engine, id dag.RunID) map[string]bool {
	t.Helper()
	events, err := e.Events(ctx, id)
	require.NoError(t, err)
	queued := map[string]time.Time{}
	started := map[string]bool{}
	for _, ev := range events {
		switch ev.Type {
		case store.EventQueued:
			queued[ev.Step] = ev.At
		case store.EventStarted:
			at, ok := queued[ev.Step]
			started[ev.Step] = ok && at.Equal(ev.At)
		}
	}
	return started
}

// countTrue counts the keys m maps to true.
func countTrue(m map[string]bool, keys []string) int {
	n := 0
	for _, k := range keys {
		if m[k] {
			n++
		}
	}
	return n
}
