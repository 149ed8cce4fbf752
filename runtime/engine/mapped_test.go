package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// mapDef is List -> Square (each=List) -> Sum, hand-wired the way
// generated code wires a mapped step: List returns input-many ints,
// Square runs once per element and Sum takes []int.
type mapDef struct {
	mu    sync.Mutex
	calls map[int]int    // Square calls by element
	infos []dag.StepInfo // Square's infos
	fail  func(v, attempt int) error
	limit int
	max   int // most Square calls at once
	cur   int
}

func (m *mapDef) def() *engine.Definition {
	m.calls = make(map[int]int)
	return &engine.Definition{Name: "mapped", Steps: []engine.Step{
		{Name: "List", OutputType: "[]int", Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
			n, err := engine.Input[int](in)
			if err != nil {
				return nil, err
			}
			var out []int
			for i := range n {
				out = append(out, i+1)
			}
			return engine.Encode(out)
		}},
		{Name: "Square", Parents: req("List"), Each: "List", Limit: m.limit, OutputType: "int",
			Retry: engine.RetryPolicy{MaxRetries: 2},
			Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
				v, err := engine.ParentOutput[int](in, "List")
				if err != nil {
					return nil, err
				}
				info, _ := dag.Info(ctx)
				m.mu.Lock()
				m.calls[info.Element]++
				m.infos = append(m.infos, info)
				m.cur++
				m.max = max(m.max, m.cur)
				m.mu.Unlock()
				defer func() { m.mu.Lock(); m.cur--; m.mu.Unlock() }()
				if m.fail != nil {
					if err := m.fail(v, info.Attempt); err != nil {
						return nil, err
					}
				}
				return engine.Encode(v * v)
			}},
		{Name: "Sum", Parents: req("Square"), OutputType: "int", Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
			sq, err := engine.ParentOutput[[]int](in, "Square")
			if err != nil {
				return nil, err
			}
			if sq == nil {
				return nil, errors.New("Sum got a nil slice")
			}
			sum := 0
			for i, v := range sq {
				if v != (i+1)*(i+1) {
					return nil, dag.Terminal(fmt.Errorf("element %d is %d: out of order", i, v))
				}
				sum += v
			}
			return engine.Encode(sum)
		}},
	}}
}

func TestMapRunsEachElementAndCollectsInOrder(t *testing.T) {
	m := &mapDef{}
	_, res, err := runDef(t, m.def(), 20)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	sum, err := engine.Output[int](res, "Sum")
	require.NoError(t, err)
	require.Equal(t, 2870, sum) // 1²+…+20²
	sq, err := engine.Output[[]int](res, "Square")
	require.NoError(t, err)
	require.Len(t, sq, 20)
	require.Len(t, m.calls, 20)
	for i := range 20 {
		require.Equal(t, 1, m.calls[i], "element %d", i)
		el := res.Tasks[store.ElementName("Square", i)]
		require.Equal(t, store.TaskCompleted, el.Status)
		require.Equal(t, i, el.Element)
	}
	require.Equal(t, 20, res.Tasks["Square"].Elements)
	for _, info := range m.infos {
		require.True(t, info.Mapped)
		require.Equal(t, "Square", info.Step)
		require.Equal(t, fmt.Sprintf("%s/Square[%d]", info.RunID, info.Element), info.IdempotencyKey())
	}
}

func TestMapEmptySliceCompletesWithEmptyOutput(t *testing.T) {
	m := &mapDef{}
	_, res, err := runDef(t, m.def(), 0)
	require.NoError(t, err)
	sq, err := engine.Output[[]int](res, "Square")
	require.NoError(t, err)
	require.NotNil(t, sq)
	require.Empty(t, sq)
	require.Empty(t, m.calls)
	sum, err := engine.Output[int](res, "Sum")
	require.NoError(t, err)
	require.Zero(t, sum)
}

func TestMapElementRetriesAlone(t *testing.T) {
	m := &mapDef{fail: func(v, attempt int) error {
		if v == 3 && attempt == 1 {
			return errors.New("flaky")
		}
		return nil
	}}
	h, res, err := runDef(t, m.def(), 5)
	_ = h
	require.NoError(t, err)
	require.Equal(t, 2, m.calls[2])
	require.Equal(t, 1, m.calls[0])
	require.Equal(t, 2, res.Tasks["Square[2]"].Attempt)
	require.Equal(t, 1, res.Tasks["Square"].Attempt, "the mapped task itself ran once")
}

func TestMapElementFailureFailsRun(t *testing.T) {
	m := &mapDef{limit: 1, fail: func(v, attempt int) error {
		if v == 2 {
			return dag.Terminal(errors.New("bad element"))
		}
		return nil
	}}
	_, res, err := runDef(t, m.def(), 5)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	require.Equal(t, "Square[1]", res.Failure.Step)
	require.Equal(t, store.TaskFailed, res.Tasks["Square[1]"].Status)
	require.Equal(t, store.TaskCancelled, res.Tasks["Square"].Status)
	require.Equal(t, store.TaskCancelled, res.Tasks["Sum"].Status)
	for i := 2; i < 5; i++ {
		require.Equal(t, store.TaskCancelled, res.Tasks[store.ElementName("Square", i)].Status, "element %d", i)
	}
	require.Zero(t, m.calls[2], "elements after a failure are not run (limit 1)")
}

func TestMapOverCapFailsParent(t *testing.T) {
	m := &mapDef{}
	ctx := context.Background()
	e, err := engine.New(memstore.New(nil), &engine.Config{Manual: true, MaxElements: 3})
	require.NoError(t, err)
	require.NoError(t, e.Register(m.def()))
	res, err := e.Run(ctx, "mapped", "tenant", 4)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	require.Equal(t, "List", res.Failure.Step)
	require.Contains(t, res.Failure.Message, "4 elements")
	require.Contains(t, res.Failure.Message, "cap of 3")
}

// TestMapTruthTable covers the truth table's rows for a mapped step as a
// whole: a skipped parent cascades to it (and on to its children), a skip
// predicate skips it before it is mapped, and an optional child of a
// skipped mapped step runs with an empty Maybe.
func TestMapTruthTable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		listSkip   bool
		mapSkip    bool
		wantReason string
	}{
		{"skipped parent cascades", true, false, "parent List skipped"},
		{"predicate skips the whole step", false, true, "skip=always"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &mapDef{}
			def := m.def()
			if tc.listSkip {
				def.Steps[0].Skip = []engine.Predicate{always}
			}
			if tc.mapSkip {
				def.Steps[1].Skip = []engine.Predicate{{Name: "always", Eval: func(ctx context.Context, in engine.StepInput) (bool, error) {
					whole, err := engine.ParentOutput[[]int](in, "List")
					if err != nil || len(whole) != 3 {
						return false, fmt.Errorf("the predicate sees the whole slice: %v, %w", whole, err)
					}
					return true, nil
				}}}
			}
			def.Steps = append(def.Steps, engine.Step{Name: "Count", Parents: append(req("List"), opt("Square")...), OutputType: "int",
				Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
					sq, err := engine.ParentMaybe[[]int](in, "Square")
					if err != nil {
						return nil, err
					}
					v, ok := sq.Get()
					if !ok {
						return engine.Encode(-1)
					}
					return engine.Encode(len(v))
				}})
			_, res, err := runDef(t, def, 3)
			require.NoError(t, err)
			require.Equal(t, store.TaskSkipped, res.Tasks["Square"].Status)
			require.Equal(t, tc.wantReason, res.Tasks["Square"].Reason)
			require.Equal(t, store.TaskSkipped, res.Tasks["Sum"].Status, "a required child cascades")
			require.Equal(t, "parent Square skipped", res.Tasks["Sum"].Reason)
			require.Empty(t, m.calls, "no element ran")
			_, mapped := res.Tasks["Square[0]"]
			require.False(t, mapped, "a skipped mapped step has no elements")
			if !tc.listSkip {
				n, err := engine.Output[int](res, "Count")
				require.NoError(t, err)
				require.Equal(t, -1, n, "an optional child gets an empty Maybe")
			}
		})
	}
}

// TestMapOfMap maps a mapped step's output: element i feeds element i.
func TestMapOfMap(t *testing.T) {
	m := &mapDef{}
	def := m.def()
	def.Steps = append(def.Steps, engine.Step{Name: "Neg", Parents: req("Square"), Each: "Square", OutputType: "int",
		Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
			v, err := engine.ParentOutput[int](in, "Square")
			if err != nil {
				return nil, err
			}
			return engine.Encode(-v)
		}})
	_, res, err := runDef(t, def, 4)
	require.NoError(t, err)
	neg, err := engine.Output[[]int](res, "Neg")
	require.NoError(t, err)
	require.Equal(t, []int{-1, -4, -9, -16}, neg)
}
