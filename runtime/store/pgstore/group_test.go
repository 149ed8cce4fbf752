package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestConcurrentCreatesKeepTheQueueFair creates single-step runs of two
// tenants from 32 goroutines at once, one run a call, so that calls share
// transactions (see CreateRuns). Every run is created and queued once, and
// the queue serves the two tenants in turn: each tenant's runs took
// consecutive blocks of the fair queue, whichever calls went together.
func TestConcurrentCreatesKeepTheQueueFair(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil, 8)
	const callers, perCaller = 32, 20
	var mu sync.Mutex
	tenantOf := map[dag.RunID]string{}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		tenant := []string{"a", "b"}[c%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perCaller {
				r := newRun("grouped", tenant, step("Only"))
				if err := s.CreateRuns(ctx, []store.NewRun{r}); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				tenantOf[r.ID] = tenant
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, callers*perCaller, len(tenantOf))

	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 2 * callers * perCaller, Lease: time.Minute})
	require.NoError(t, err)
	require.Equal(t, callers*perCaller, len(claimed), "every run's step is queued")
	seen := map[dag.RunID]bool{}
	for i, ct := range claimed {
		require.Contains(t, tenantOf, ct.RunID)
		require.False(t, seen[ct.RunID], "run %s claimed twice", ct.RunID)
		seen[ct.RunID] = true
		if i > 0 {
			assert.NotEqual(t, tenantOf[claimed[i-1].RunID], tenantOf[ct.RunID],
				"claims %d and %d are both of tenant %s: the queue serves the tenants in turn", i-1, i, tenantOf[ct.RunID])
		}
	}
}

// TestConcurrentKeyedCreatesShareTransactions creates runs with 20 keys,
// each key 40 times, from 16 goroutines of one store, so that calls with
// the same key go in one transaction: each key starts one run, and every
// other call with it gets that run as its Existing.
func TestConcurrentKeyedCreatesShareTransactions(t *testing.T) {
	s := newStore(t, nil, 8)
	const callers, keys, rounds = 16, 20, 2
	results := make(chan keyedOutcome, callers*keys*rounds)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keys * rounds {
				o, ok := createKeyed(t, s, fmt.Sprintf("order-%d", i%keys))
				if !ok {
					return
				}
				results <- o
			}
		}()
	}
	wg.Wait()
	close(results)
	requireOneRunAKey(t, s, results, keys, callers*keys*rounds)
}

// TestConcurrentStartsShareTransactions starts single-step runs of four
// tenants from 16 goroutines of one store, each call with a limit of one,
// so that calls share transactions. A call is handed only roots of its own
// runs, never more than its limit; the roots not started are queued; and
// every run's root is started or claimed exactly once.
func TestConcurrentStartsShareTransactions(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil, 8)
	const callers, perCaller = 16, 25
	p := store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute}
	var mu sync.Mutex
	started := map[dag.RunID]int{}
	all := map[dag.RunID]bool{}
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perCaller {
				r := newRun("started", fmt.Sprintf("tenant-%d", (c+i)%4), step("Only"))
				tasks, err := s.StartRuns(ctx, []store.NewRun{r}, p)
				if err != nil {
					t.Errorf("start: %v", err)
					return
				}
				if len(tasks) > p.Limit {
					t.Errorf("a call with a limit of %d was handed %d roots", p.Limit, len(tasks))
				}
				mu.Lock()
				all[r.ID] = true
				for _, ct := range tasks {
					if ct.RunID != r.ID {
						t.Errorf("a call of run %s was handed a root of run %s", r.ID, ct.RunID)
					}
					started[ct.RunID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, callers*perCaller, len(all))
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 2 * callers * perCaller, Lease: time.Minute})
	require.NoError(t, err)
	for _, ct := range claimed {
		started[ct.RunID]++
	}
	require.Equal(t, callers*perCaller, len(started), "every run's root is started or queued")
	for id, n := range started {
		require.Equal(t, 1, n, "run %s's root was handed out %d times", id, n)
	}
	t.Logf("%d roots started by their calls, %d queued", callers*perCaller-len(claimed), len(claimed))
}
