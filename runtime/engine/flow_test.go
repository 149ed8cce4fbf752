package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// cappedJob is the input of a capped workflow: its concurrency key.
type cappedJob struct {
	Customer string
	N        int
}

// activeRuns counts, per concurrency key, the runs between the start of
// their first step and the end of their last: a window inside the time
// the run is RUNNING, so it never exceeds the cap.
type activeRuns struct {
	mu     sync.Mutex
	active map[string]int
	max    map[string]int
}

func (a *activeRuns) enter(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.active[key]++
	a.max[key] = max(a.max[key], a.active[key])
}

func (a *activeRuns) leave(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.active[key]--
}

// cappedDef is a two-step workflow capped at limit runs per customer; each
// step takes a little while, so that runs overlap. admitted, if set, is
// called at the start of each run's first step.
func cappedDef(limit int, a *activeRuns, admitted func(key string)) *engine.Definition {
	step := func(first bool) func(ctx context.Context, in engine.StepInput) ([]byte, error) {
		return func(ctx context.Context, in engine.StepInput) ([]byte, error) {
			j, err := engine.Input[cappedJob](in)
			if err != nil {
				return nil, err
			}
			if first {
				a.enter(j.Customer)
				if admitted != nil {
					admitted(j.Customer)
				}
			}
			time.Sleep(2 * time.Millisecond)
			if !first {
				a.leave(j.Customer)
			}
			return nil, nil
		}
	}
	return &engine.Definition{
		Name:        "capped",
		Concurrency: limit,
		ConcurrencyKey: func(in []byte) (string, error) {
			j, err := engine.Input[cappedJob](engine.StepInput{Input: in})
			return j.Customer, err
		},
		Steps: []engine.Step{
			{Name: "Open", Run: step(true)},
			{Name: "Close", Parents: req("Open"), Run: step(false)},
		},
	}
}

// slotSample is the state of the caps in one snapshot: per key, the
// RUNNING runs and the slot's own count.
type slotSample struct {
	key              string
	running, counted int
}

func sampleSlots(ctx context.Context, pool *pgxpool.Pool) ([]slotSample, error) {
	rows, err := pool.Query(ctx, `
		SELECT s.key, s.running,
		       (SELECT count(*) FROM dagen_runs r WHERE r.workflow = s.workflow AND r.slot = s.key AND r.status = 'RUNNING')::int
		FROM dagen_slots s WHERE s.workflow = 'capped'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []slotSample
	for rows.Next() {
		var s slotSample
		if err := rows.Scan(&s.key, &s.counted, &s.running); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// TestConcurrencyCapUnderLoad: 8 workers, each with a store of its own as
// a worker process has, and 8 goroutines triggering at once, run 240 runs
// of a workflow capped at 2 RUNNING runs per customer over 6 customers.
// At every admission (the start of a run's first step) and all along, the
// database's count of RUNNING runs per customer is read: it never exceeds
// the cap, and the slot's own count always equals it. The runs' active
// windows never overlap more than the cap either, and do reach it.
func TestConcurrencyCapUnderLoad(t *testing.T) {
	const (
		limit     = 2
		customers = 6
		triggers  = 8
		perTrig   = 30
	)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	schema := pgtest.Schema(t)
	require.NoError(t, pgstore.Migrate(ctx, pgtest.Pool(t, schema, 2)))
	probe := pgtest.Pool(t, schema, 4)

	var mu sync.Mutex
	var samples []slotSample
	record := func() {
		got, err := sampleSlots(ctx, probe)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("sample slots: %v", err)
			}
			return
		}
		mu.Lock()
		samples = append(samples, got...)
		mu.Unlock()
	}
	a := &activeRuns{active: map[string]int{}, max: map[string]int{}}
	var engines []*engine.Engine
	for i := range 8 {
		st, err := pgstore.New(ctx, pgtest.Pool(t, schema, 4), nil)
		require.NoError(t, err)
		engines = append(engines, worker(t, st, fmt.Sprintf("w%d", i), cappedDef(limit, a, func(string) { record() })))
	}
	done := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				record()
			}
		}
	})

	var ids sync.Map
	var wg sync.WaitGroup
	for g := range triggers {
		wg.Go(func() {
			e := engines[g]
			for i := range perTrig {
				c := fmt.Sprintf("c%d", (g*perTrig+i)%customers)
				id, err := e.Trigger(ctx, "capped", fmt.Sprintf("tenant%d", g%3), cappedJob{Customer: c, N: i})
				if err != nil {
					t.Errorf("trigger: %v", err)
					return
				}
				ids.Store(id, c)
			}
		})
	}
	wg.Wait()
	n := 0
	ids.Range(func(k, _ any) bool {
		res, err := engines[0].Wait(ctx, k.(dag.RunID))
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
		n++
		return true
	})
	close(done)
	sampler.Wait()
	require.Equal(t, triggers*perTrig, n)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, samples)
	for _, s := range samples {
		require.LessOrEqual(t, s.running, limit, "customer %s had %d RUNNING runs", s.key, s.running)
		require.Equal(t, s.running, s.counted, "customer %s: the slot counts what runs", s.key)
	}
	reached := 0
	for c := range customers {
		key := fmt.Sprintf("c%d", c)
		require.LessOrEqual(t, a.max[key], limit, "customer %s had %d runs active at once", key, a.max[key])
		if a.max[key] == limit {
			reached++
		}
	}
	require.Positive(t, reached, "the cap was reached: the test put it under load")
	final, err := sampleSlots(ctx, probe)
	require.NoError(t, err)
	for _, s := range final {
		require.Zero(t, s.counted, "customer %s: every run gave its slot back", s.key)
	}
}

// TestConcurrencyCapKeepsKeysApart: one customer's backlog does not delay
// another's runs, on either store.
func TestConcurrencyCapKeepsKeysApart(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var closed atomic.Int64
		def := &engine.Definition{
			Name: "capped", Concurrency: 1,
			ConcurrencyKey: func(in []byte) (string, error) {
				j, err := engine.Input[cappedJob](engine.StepInput{Input: in})
				return j.Customer, err
			},
			Steps: []engine.Step{{Name: "Work", Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
				time.Sleep(20 * time.Millisecond)
				closed.Add(1)
				return nil, nil
			}}},
		}
		e := worker(t, open(), "w", def)
		var big []dag.RunID
		for i := range 40 {
			id, err := e.Trigger(ctx, "capped", "acme", cappedJob{Customer: "big", N: i})
			require.NoError(t, err)
			big = append(big, id)
		}
		small, err := e.Trigger(ctx, "capped", "acme", cappedJob{Customer: "small"})
		require.NoError(t, err)
		_, err = e.Wait(ctx, small)
		require.NoError(t, err)
		require.Less(t, closed.Load(), int64(len(big)/2),
			"the small customer's run finished while most of the big one's backlog waited")
		for _, id := range big {
			_, err := e.Wait(ctx, id)
			require.NoError(t, err)
		}
	})
}
