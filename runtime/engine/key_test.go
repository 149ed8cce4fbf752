package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// keyedOrder is an input with an id to key runs by.
type keyedOrder struct {
	ID     string
	Amount int
}

func keyedDef(calls *sync.Map) *engine.Definition {
	return &engine.Definition{Name: "charge",
		Key: func(in []byte) (string, error) {
			o, err := engine.Input[keyedOrder](engine.StepInput{Input: in})
			return o.ID, err
		},
		Steps: []engine.Step{{Name: "Charge", OutputType: "int", Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
			o, err := engine.Input[keyedOrder](in)
			if err != nil {
				return nil, err
			}
			n, _ := calls.LoadOrStore(o.ID, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			return engine.Encode(o.Amount)
		}}},
	}
}

// TestIdempotencyKey: a second trigger with the key of a retained run
// starts nothing and gets that run; WithKey overrides the derived key.
func TestIdempotencyKey(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		var calls sync.Map
		e := worker(t, open(), "w", keyedDef(&calls))
		first, err := e.TriggerRun(ctx, "charge", "acme", keyedOrder{ID: "o-1", Amount: 5})
		require.NoError(t, err)
		require.False(t, first.Duplicate)
		again, err := e.TriggerRun(ctx, "charge", "acme", keyedOrder{ID: "o-1", Amount: 99})
		require.NoError(t, err)
		require.True(t, again.Duplicate)
		require.Equal(t, first.ID, again.ID)
		id, err := e.Trigger(ctx, "charge", "acme", keyedOrder{ID: "o-1"})
		require.NoError(t, err)
		require.Equal(t, first.ID, id, "Trigger returns the existing run's id with a nil error")

		other, err := e.TriggerRun(ctx, "charge", "zeta", keyedOrder{ID: "o-1", Amount: 7})
		require.NoError(t, err)
		require.False(t, other.Duplicate, "keys are per tenant")

		over, err := e.TriggerRun(ctx, "charge", "acme", keyedOrder{ID: "o-1", Amount: 8}, engine.WithKey("manual"))
		require.NoError(t, err)
		require.False(t, over.Duplicate, "WithKey overrides the derived key")
		dup, err := e.TriggerRun(ctx, "charge", "acme", keyedOrder{ID: "o-2"}, engine.WithKey("manual"))
		require.NoError(t, err)
		require.Equal(t, over.ID, dup.ID)

		res, err := e.Wait(ctx, first.ID)
		require.NoError(t, err)
		amount, err := engine.Output[int](res, "Charge")
		require.NoError(t, err)
		require.Equal(t, 5, amount, "the duplicate's input was not used")
		for _, id := range []dag.RunID{other.ID, over.ID} {
			_, err := e.Wait(ctx, id)
			require.NoError(t, err)
		}
		n, _ := calls.Load("o-1")
		require.EqualValues(t, 3, n.(*atomic.Int64).Load(), "o-1 charged once per run: acme, zeta and the manual key")

		_, err = e.TriggerRun(ctx, "charge", "acme", keyedOrder{ID: "x"}, engine.WithKey(strings.Repeat("k", store.MaxKeyLen+1)))
		require.ErrorIs(t, err, store.ErrInvalidKey)
	})
}

// TestIdempotencyKeyConcurrentTriggers triggers the same keys from many
// goroutines on two workers at once: one run a key.
func TestIdempotencyKeyConcurrentTriggers(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		ctx := context.Background()
		var calls sync.Map
		engines := []*engine.Engine{worker(t, open(), "w1", keyedDef(&calls)), worker(t, open(), "w2", keyedDef(&calls))}
		var mu sync.Mutex
		started := map[string][]engine.Triggered{}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range 10 {
					key := fmt.Sprintf("o-%d", k)
					tr, err := engines[g%2].TriggerRun(ctx, "charge", "acme", keyedOrder{ID: key, Amount: k})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					started[key] = append(started[key], tr)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for key, trs := range started {
			created := 0
			for _, tr := range trs {
				if !tr.Duplicate {
					created++
				}
				require.Equal(t, trs[0].ID, tr.ID, "key %s", key)
			}
			require.Equal(t, 1, created, "key %s started %d runs", key, created)
			_, err := engines[0].Wait(ctx, trs[0].ID)
			require.NoError(t, err)
			n, _ := calls.Load(key)
			require.EqualValues(t, 1, n.(*atomic.Int64).Load())
		}
	})
}

func TestIdempotencyKeyDerivationError(t *testing.T) {
	var calls sync.Map
	def := keyedDef(&calls)
	def.Key = func([]byte) (string, error) { return "", errors.New("no id") }
	_, res, err := runDef(t, def, 1)
	require.ErrorContains(t, err, "derive the idempotency key: no id")
	require.Nil(t, res)
}
