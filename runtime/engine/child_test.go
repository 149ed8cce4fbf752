package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// shippingDef is a child workflow: its input is an int, and its result
// step "label" gives "label-<input>", or fails when the input is 13, or
// blocks until release is closed when the input is 99 (nil release: no
// block). A step skipped for inputs below zero makes the result skipped.
func shippingDef(release <-chan struct{}) *engine.Definition {
	return &engine.Definition{Name: "shipping", Steps: []engine.Step{
		{Name: "label", OutputType: "string", Run: fn(func(ctx context.Context, in int, _ []string) (string, error) {
			switch {
			case in == 13:
				return "", dag.Terminal(errors.New("no carrier for 13"))
			case in == 99 && release != nil:
				select {
				case <-release:
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
			return fmt.Sprintf("label-%d", in), nil
		}), Skip: []engine.Predicate{{Name: "negative", Eval: func(_ context.Context, si engine.StepInput) (bool, error) {
			in, err := engine.Input[int](si)
			return in < 0, err
		}}}},
	}}
}

// checkoutDef runs shipping as a child of its step "ship", with the
// input's value as the child's, and its step "done" reads the child's
// result.
func checkoutDef(failures *atomic.Int64) *engine.Definition {
	return &engine.Definition{Name: "checkout",
		Steps: []engine.Step{
			{Name: "prepare", Run: fn(func(context.Context, int, []string) (string, error) { return "ok", nil })},
			{Name: "ship", Kind: engine.KindChild, Parents: req("prepare"), OutputType: "string",
				Child: &engine.Child{Workflow: "shipping", Result: "label"},
				Run: func(_ context.Context, si engine.StepInput) ([]byte, error) {
					in, err := engine.Input[int](si)
					if err != nil {
						return nil, err
					}
					return engine.Encode(in)
				}},
			{Name: "done", Parents: opt("ship"), Run: fn(func(_ context.Context, _ int, ps []string) (string, error) {
				return "done:" + ps[0], nil
			})},
		},
		OnFailure: func(context.Context, engine.StepInput, dag.Failure) error {
			if failures != nil {
				failures.Add(1)
			}
			return nil
		},
	}
}

func TestChildRuns(t *testing.T) { eachStoreAndPgBouncer(t, testChildRuns) }

func testChildRuns(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	release := make(chan struct{})
	var failures atomic.Int64
	st := open()
	e := worker(t, st, "w1", shippingDef(release), checkoutDef(&failures))

	t.Run("result flows", func(t *testing.T) {
		res, err := e.Run(ctx, "checkout", "t1", 7)
		require.NoError(t, err)
		require.Equal(t, "label-7", output(t, res, "ship"))
		require.Equal(t, "done:label-7", output(t, res, "done"))
		kids, err := st.ListChildren(ctx, res.ID)
		require.NoError(t, err)
		require.Len(t, kids, 1)
		require.Equal(t, "ship", kids[0].Task)
		require.Equal(t, store.RunCompleted, kids[0].Status)
		child, err := st.GetRun(ctx, kids[0].ID)
		require.NoError(t, err)
		require.Equal(t, "t1", child.Tenant, "a child runs under its parent's tenant")
		require.NotNil(t, child.Parent)
		require.Equal(t, res.ID, child.Parent.Run)
		require.Equal(t, "ship", child.Parent.Task)
		require.Equal(t, 1, child.Parent.Attempt)
	})

	t.Run("result skipped skips the step", func(t *testing.T) {
		res, err := e.Run(ctx, "checkout", "t1", -1)
		require.NoError(t, err)
		require.Equal(t, store.TaskSkipped, res.Tasks["ship"].Status)
		require.Contains(t, res.Tasks["ship"].Reason, "skipped its result step label")
		require.Equal(t, store.TaskSkipped, res.Tasks["done"].Status, "its only parent was skipped")
	})

	t.Run("child failure fails the parent", func(t *testing.T) {
		before := failures.Load()
		res, err := e.Run(ctx, "checkout", "t1", 13)
		var re *engine.RunError
		require.ErrorAs(t, err, &re)
		require.Equal(t, store.RunFailed, res.Status)
		require.Equal(t, store.TaskFailed, res.Tasks["ship"].Status)
		require.Contains(t, res.Tasks["ship"].Error, "of shipping failed at step label: no carrier for 13")
		require.Eventually(t, func() bool { return failures.Load() == before+1 }, 10*time.Second, 10*time.Millisecond,
			"the parent's onfailure runs")
	})

	t.Run("cancelling the parent cancels the child", func(t *testing.T) {
		run, err := e.Trigger(ctx, "checkout", "t1", 99)
		require.NoError(t, err)
		kid := firstChild(ctx, t, st, run)
		ok, err := e.Cancel(ctx, run)
		require.NoError(t, err)
		require.True(t, ok)
		require.Eventually(t, func() bool {
			r, err := st.GetRun(ctx, kid.ID)
			return err == nil && r.Status == store.RunCancelled
		}, 10*time.Second, 5*time.Millisecond)
	})

	t.Run("cancelling the child fails the parent", func(t *testing.T) {
		run, err := e.Trigger(ctx, "checkout", "t1", 99)
		require.NoError(t, err)
		kid := firstChild(ctx, t, st, run)
		_, err = e.Cancel(ctx, kid.ID)
		require.NoError(t, err)
		res, err := e.Wait(ctx, run)
		require.Error(t, err)
		require.Equal(t, store.RunFailed, res.Status)
		require.Contains(t, res.Tasks["ship"].Error, "of shipping was cancelled")
	})

	t.Run("retry from the step starts a new child", func(t *testing.T) {
		res, err := e.Run(ctx, "checkout", "t1", 13)
		require.Error(t, err)
		require.NotNil(t, res)
		_, err = e.Retry(ctx, res.ID, store.Retry{Mode: store.RetryFrom, From: "ship", Operator: "test"})
		require.NoError(t, err)
		_, err = e.Wait(ctx, res.ID)
		require.Error(t, err, "13 fails again")
		kids, err := st.ListChildren(ctx, res.ID)
		require.NoError(t, err)
		require.Len(t, kids, 2, "one child per attempt")
		require.NotEqual(t, kids[0].Attempt, kids[1].Attempt)
	})
	close(release)
}

// TestChildRunDeadline: a parent that times out cancels its child.
func TestChildRunDeadline(t *testing.T) { eachStore(t, testChildRunDeadline) }

func testChildRunDeadline(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := open()
	release := make(chan struct{})
	defer close(release)
	parent := checkoutDef(nil)
	// Long enough for the child to start on a loaded machine (the test
	// asserts it was started, then cancelled), short enough to wait for.
	parent.Timeout = 2 * time.Second
	e := worker(t, st, "w1", shippingDef(release), parent)
	res, err := e.Run(ctx, "checkout", "t1", 99)
	require.Error(t, err)
	require.Equal(t, store.RunFailed, res.Status)
	require.Contains(t, res.Failure.Message, "timed out")
	kids, err := st.ListChildren(ctx, res.ID)
	require.NoError(t, err)
	require.Len(t, kids, 1)
	require.Eventually(t, func() bool {
		r, err := st.GetRun(ctx, kids[0].ID)
		return err == nil && r.Status == store.RunCancelled
	}, 10*time.Second, 5*time.Millisecond)
}

// TestChildRunsMapped: a mapped child step starts one child per element,
// at most limit of them at once, and collects their results in order.
func TestChildRunsMapped(t *testing.T) { eachStore(t, testChildRunsMapped) }

func testChildRunsMapped(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	running, most := 0, 0
	child := &engine.Definition{Name: "item", Steps: []engine.Step{
		{Name: "work", Run: fn(func(_ context.Context, in int, _ []string) (string, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			return fmt.Sprint("w", in), nil
		})},
	}}
	parent := &engine.Definition{Name: "fan", Steps: []engine.Step{
		{Name: "list", Run: func(_ context.Context, si engine.StepInput) ([]byte, error) {
			n, err := engine.Input[int](si)
			if err != nil {
				return nil, err
			}
			items := make([]int, n)
			for i := range items {
				items[i] = i
			}
			return engine.Encode(items)
		}},
		{Name: "each", Kind: engine.KindChild, Parents: req("list"), Each: "list", Limit: 2, OutputType: "string",
			Child: &engine.Child{Workflow: "item", Result: "work"},
			Run: func(_ context.Context, si engine.StepInput) ([]byte, error) {
				v, err := engine.ParentOutput[int](si, "list")
				if err != nil {
					return nil, err
				}
				return engine.Encode(v)
			}},
		{Name: "join", Parents: req("each"), Run: func(_ context.Context, si engine.StepInput) ([]byte, error) {
			outs, err := engine.ParentOutput[[]string](si, "each")
			if err != nil {
				return nil, err
			}
			return engine.Encode(strings.Join(outs, ","))
		}},
	}}
	st := open()
	e := worker(t, st, "w1", child, parent)
	res, err := e.Run(ctx, "fan", "t1", 6)
	require.NoError(t, err)
	require.Equal(t, "w0,w1,w2,w3,w4,w5", output(t, res, "join"))
	kids, err := st.ListChildren(ctx, res.ID)
	require.NoError(t, err)
	require.Len(t, kids, 6)
	mu.Lock()
	defer mu.Unlock()
	require.LessOrEqual(t, most, 2, "limit=2 bounds the children in flight")
}

// TestChildNotRegistered: Start refuses a workflow whose child workflow
// is not registered, and says what to do.
func TestChildNotRegistered(t *testing.T) {
	e, err := engine.New(memstore.New(nil), &engine.Config{WorkerID: "w"})
	require.NoError(t, err)
	require.NoError(t, e.Register(checkoutDef(nil)))
	err = e.Start(context.Background())
	require.ErrorIs(t, err, engine.ErrChildNotRegistered)
	require.ErrorContains(t, err, `step "ship" runs workflow "shipping" as a child`)

	// A manual engine (dagtest's) says so at its first Poll.
	m, err := engine.New(memstore.New(nil), &engine.Config{WorkerID: "m", Manual: true})
	require.NoError(t, err)
	require.NoError(t, m.Register(checkoutDef(nil)))
	_, err = m.Poll(context.Background())
	require.ErrorIs(t, err, engine.ErrChildNotRegistered)
	require.NoError(t, m.Register(shippingDef(nil)))
	_, err = m.Poll(context.Background())
	require.NoError(t, err)
}

// firstChild waits until run has started a child run, and returns it.
func firstChild(ctx context.Context, t *testing.T, st store.Store, run dag.RunID) store.ChildRun {
	t.Helper()
	var kid store.ChildRun
	require.Eventually(t, func() bool {
		kids, err := st.ListChildren(ctx, run)
		if err != nil || len(kids) == 0 {
			return false
		}
		kid = kids[0]
		return true
	}, 10*time.Second, 5*time.Millisecond)
	return kid
}
