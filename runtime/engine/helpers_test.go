package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// req and opt build parent lists for hand-wired definitions.
func req(names ...string) []engine.Parent {
	ps := make([]engine.Parent, len(names))
	for i, n := range names {
		ps[i] = engine.Parent{Name: n}
	}
	return ps
}

func opt(names ...string) []engine.Parent {
	ps := req(names...)
	for i := range ps {
		ps[i].Optional = true
	}
	return ps
}

// fn adapts a function over decoded values to a step's Run, the way
// generated code does: it decodes the int input and the parents' string
// outputs (skipped parents arrive as "-", parents without output as "nil") and encodes the result.
func fn(f func(ctx context.Context, in int, parents []string) (string, error)) func(context.Context, engine.StepInput) ([]byte, error) {
	return func(ctx context.Context, si engine.StepInput) ([]byte, error) {
		in, err := engine.Input[int](si)
		if err != nil {
			return nil, err
		}
		ps := make([]string, len(si.Parents))
		for i := range si.Parents {
			if si.Parents[i].Status == store.TaskCompleted && si.Parents[i].Output == nil {
				ps[i] = "nil" // a parent without output, like a sleep
				continue
			}
			m, err := engine.ParentMaybe[string](si, si.Parents[i].Step)
			if err != nil {
				return nil, err
			}
			ps[i] = m.OrElse("-")
		}
		out, err := f(ctx, in, ps)
		if err != nil {
			return nil, err
		}
		return engine.Encode(out)
	}
}

// runDef registers def on a fresh harness, runs it with input until idle,
// and returns the harness and the result.
func runDef(t *testing.T, def *engine.Definition, input int) (*dagtest.Harness, *engine.RunResult, error) {
	t.Helper()
	ctx := context.Background()
	h := dagtest.New(t)
	require.NoError(t, h.Engine.Register(def))
	res, err := h.Engine.Run(ctx, def.Name, "tenant", input)
	return h, res, err
}

func statuses(res *engine.RunResult) map[string]store.TaskStatus {
	m := make(map[string]store.TaskStatus, len(res.Tasks))
	for n, t := range res.Tasks {
		m[n] = t.Status
	}
	return m
}

func output(t *testing.T, res *engine.RunResult, step string) string {
	t.Helper()
	v, err := engine.Output[string](res, step)
	require.NoError(t, err)
	return v
}

func newHarness(t *testing.T, def *engine.Definition) *dagtest.Harness {
	t.Helper()
	h := dagtest.New(t)
	require.NoError(t, h.Engine.Register(def))
	return h
}

func dagtestEpoch() time.Time { return dagtest.Epoch }
