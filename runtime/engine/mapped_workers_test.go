package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// mapTally counts, across workers, each element's runs, each run's
// collector runs, and the most elements of a run running at once.
type mapTally struct {
	mu        sync.Mutex
	elements  map[string]int    // run/element -> calls
	collected map[dag.RunID]int // run -> Sum calls
	running   map[dag.RunID]int
	peak      map[dag.RunID]int
}

func (m *mapTally) def(name string, limit int) *engine.Definition {
	return &engine.Definition{Name: name, Steps: []engine.Step{
		{Name: "List", OutputType: "[]int", Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
			n, err := engine.Input[int](in)
			if err != nil {
				return nil, err
			}
			out := make([]int, n)
			for i := range out {
				out[i] = i
			}
			return engine.Encode(out)
		}},
		{Name: "Echo", Parents: req("List"), Each: "List", Limit: limit, OutputType: "int",
			Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
				v, err := engine.ParentOutput[int](in, "List")
				if err != nil {
					return nil, err
				}
				info, _ := dag.Info(ctx)
				m.mu.Lock()
				m.elements[fmt.Sprintf("%s/%d", info.RunID, info.Element)]++
				m.running[info.RunID]++
				m.peak[info.RunID] = max(m.peak[info.RunID], m.running[info.RunID])
				m.mu.Unlock()
				time.Sleep(time.Duration(v%3) * time.Millisecond)
				m.mu.Lock()
				m.running[info.RunID]--
				m.mu.Unlock()
				if v != info.Element {
					return nil, dag.Terminal(fmt.Errorf("element %d got %d", info.Element, v))
				}
				return engine.Encode(v)
			}},
		{Name: "Sum", Parents: req("Echo"), OutputType: "int", Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
			vs, err := engine.ParentOutput[[]int](in, "Echo")
			if err != nil {
				return nil, err
			}
			info, _ := dag.Info(ctx)
			m.mu.Lock()
			m.collected[info.RunID]++
			m.mu.Unlock()
			sum := 0
			for i, v := range vs {
				if v != i {
					return nil, dag.Terminal(fmt.Errorf("element %d holds %d: out of order", i, v))
				}
				sum += v
			}
			return engine.Encode(sum)
		}},
	}}
}

// TestMapAcrossWorkers runs mapped runs on four workers at once: every
// element runs exactly once, every collector once per run, a run's
// elements never run more than its limit at once, and outputs are
// collected in order.
func TestMapAcrossWorkers(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		m := &mapTally{elements: map[string]int{}, collected: map[dag.RunID]int{}, running: map[dag.RunID]int{}, peak: map[dag.RunID]int{}}
		var engines []*engine.Engine
		for i := range 4 {
			engines = append(engines, worker(t, open(), fmt.Sprintf("w%d", i), m.def("limited", 3), m.def("free", 0)))
		}
		const runs, n = 12, 60
		type started struct {
			id    dag.RunID
			limit int
		}
		var ids []started
		for i := range runs {
			wf, limit := "free", 0
			if i%2 == 0 {
				wf, limit = "limited", 3
			}
			id, err := engines[i%len(engines)].Trigger(ctx, wf, fmt.Sprintf("tenant-%d", i%3), n)
			require.NoError(t, err)
			ids = append(ids, started{id, limit})
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		for _, s := range ids {
			res, err := engines[0].Wait(wctx, s.id)
			require.NoError(t, err)
			sum, err := engine.Output[int](res, "Sum")
			require.NoError(t, err)
			require.Equal(t, n*(n-1)/2, sum)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		require.Len(t, m.elements, runs*n)
		for k, c := range m.elements {
			require.Equal(t, 1, c, "element %s ran %d times", k, c)
		}
		for _, s := range ids {
			require.Equal(t, 1, m.collected[s.id], "run %s collected %d times", s.id, m.collected[s.id])
			if s.limit > 0 {
				require.LessOrEqual(t, m.peak[s.id], s.limit, "run %s ran more elements at once than its limit", s.id)
			}
		}
	})
}
