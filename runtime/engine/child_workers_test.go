package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// parcelDef is a child workflow: its one step, label, gives "L<input>".
func parcelDef() *engine.Definition {
	return &engine.Definition{Name: "parcel", Steps: []engine.Step{
		{Name: "label", OutputType: "string", Run: fn(func(_ context.Context, in int, _ []string) (string, error) {
			return fmt.Sprint("L", in), nil
		})},
	}}
}

// failsFirst reports whether the child step of run input in, at element
// el (-1: not an element), fails its first attempt: about a third of
// them, so that retries start children alongside first attempts.
func failsFirst(in, el int) bool { return (in+el)%3 == 0 }

// orderDef runs parcel as a child twice over: ship, with the input, and
// each, mapped over three elements with limit 2; join reads both. Their
// first attempt fails where failsFirst says so, before any child starts.
func orderDef() *engine.Definition {
	retry := engine.RetryPolicy{MaxRetries: 2, Backoff: time.Millisecond}
	child := &engine.Child{Workflow: "parcel", Result: "label"}
	return &engine.Definition{Name: "order", Steps: []engine.Step{
		{Name: "list", OutputType: "[]int", Run: func(_ context.Context, si engine.StepInput) ([]byte, error) {
			n, err := engine.Input[int](si)
			if err != nil {
				return nil, err
			}
			return engine.Encode([]int{n * 10, n*10 + 1, n*10 + 2})
		}},
		{Name: "ship", Kind: engine.KindChild, OutputType: "string", Child: child, Retry: retry,
			Run: func(ctx context.Context, si engine.StepInput) ([]byte, error) {
				n, err := engine.Input[int](si)
				if err != nil {
					return nil, err
				}
				if info, _ := dag.Info(ctx); info.Attempt == 1 && failsFirst(n, -1) {
					return nil, errors.New("carrier busy")
				}
				return engine.Encode(n)
			}},
		{Name: "each", Kind: engine.KindChild, Parents: req("list"), Each: "list", Limit: 2, OutputType: "string", Child: child, Retry: retry,
			Run: func(ctx context.Context, si engine.StepInput) ([]byte, error) {
				n, err := engine.Input[int](si)
				if err != nil {
					return nil, err
				}
				v, err := engine.ParentOutput[int](si, "list")
				if err != nil {
					return nil, err
				}
				if info, _ := dag.Info(ctx); info.Attempt == 1 && failsFirst(n, info.Element) {
					return nil, errors.New("carrier busy")
				}
				return engine.Encode(v)
			}},
		{Name: "join", Parents: req("ship", "each"), OutputType: "string", Run: func(_ context.Context, si engine.StepInput) ([]byte, error) {
			ship, err := engine.ParentOutput[string](si, "ship")
			if err != nil {
				return nil, err
			}
			each, err := engine.ParentOutput[[]string](si, "each")
			if err != nil {
				return nil, err
			}
			return engine.Encode(ship + "|" + strings.Join(each, ","))
		}},
	}}
}

// TestChildRunsAcrossWorkers runs many parents with child steps, plain
// and mapped, some retried, on four workers over one Postgres schema:
// every parent completes with its children's results; each attempt of a
// child task that started a child started exactly one, linked to it; and
// every step of a parent resolved once, however the workers raced to
// store results and fire the timers that resolve the parents.
func TestChildRunsAcrossWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	schema := pgtest.Schema(t)
	require.NoError(t, pgstore.Migrate(ctx, pgtest.Pool(t, schema, 2)))
	var engines []*engine.Engine
	var st store.Store
	// A worker retries a store call that fails (a deadlock, say) and logs
	// an error; a trigger returns it. Neither may happen here.
	logs := &logCount{}
	for i := range 4 {
		s, err := pgstore.New(ctx, pgtest.Pool(t, schema, 6), nil)
		require.NoError(t, err)
		st = s
		engines = append(engines, workerWith(t, s, engine.Config{
			WorkerID: fmt.Sprintf("w%d", i), Concurrency: 4, PollInterval: 5 * time.Millisecond, IdlePollInterval: 5 * time.Millisecond,
			Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond, Logger: slog.New(logs),
		}, parcelDef(), orderDef()))
	}

	const runs = 200
	ids := make([]dag.RunID, runs)
	for i := range runs {
		id, err := engines[i%len(engines)].Trigger(ctx, "order", fmt.Sprintf("tenant-%d", i%3), i)
		require.NoError(t, err)
		ids[i] = id
	}
	for i, id := range ids {
		res, err := engines[i%len(engines)].Wait(ctx, id)
		require.NoError(t, err, "run %d", i)
		require.Equal(t, store.RunCompleted, res.Status)
		require.Equal(t, fmt.Sprintf("L%d|L%d,L%d,L%d", i, i*10, i*10+1, i*10+2), output(t, res, "join"),
			"run %d: the children's results flow into the parent", i)

		// One child per attempt that started one: the last attempt of
		// each child task, and no other.
		kids, err := st.ListChildren(ctx, id)
		require.NoError(t, err)
		type attempt struct {
			task string
			n    int
		}
		seen := map[attempt]dag.RunID{}
		for _, k := range kids {
			a := attempt{k.Task, k.Attempt}
			require.NotContains(t, seen, a, "run %d: a second child %s for %s attempt %d (first %s)", i, k.ID, k.Task, k.Attempt, seen[a])
			seen[a] = k.ID
			require.Equal(t, store.RunCompleted, k.Status, "run %d: child %s of %s", i, k.ID, k.Task)
		}
		tasks := map[string]store.Task{}
		list, err := st.ListTasks(ctx, id)
		require.NoError(t, err)
		for _, tk := range list {
			tasks[tk.Name] = tk
		}
		require.Len(t, kids, 4, "run %d: ship and three elements, one child each: %v", i, seen)
		for el, name := range []string{store.ElementName("each", 0), store.ElementName("each", 1), store.ElementName("each", 2), "ship"} {
			tk := tasks[name]
			require.Contains(t, seen, attempt{name, tk.Attempt}, "run %d: the last attempt of %s started its child", i, name)
			if el == 3 {
				el = -1
			}
			if failsFirst(i, el) {
				require.GreaterOrEqual(t, tk.Attempt, 2, "run %d: %s failed its first attempt", i, name)
			}
		}

		completed := map[string]int{}
		events, err := st.ListEvents(ctx, id)
		require.NoError(t, err)
		for _, ev := range events {
			if ev.Type == store.EventCompleted {
				completed[ev.Step]++
			}
		}
		for name := range tasks {
			if name == engine.OnFailureStep {
				continue
			}
			require.Equal(t, 1, completed[name], "run %d: %s resolved once", i, name)
		}
	}
	logs.mu.Lock()
	errs, msgs := logs.errors, slices.Clone(logs.messages)
	logs.mu.Unlock()
	require.Zero(t, errs, "no worker met a store error: %v", msgs)
	counts, err := st.CountRuns(ctx, store.RunFilter{Children: store.OnlyChild})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunCompleted: 4 * runs}, counts, "no child run beyond the ones listed")
}
