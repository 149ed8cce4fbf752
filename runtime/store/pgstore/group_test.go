package pgstore_test

import (
	"context"
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
	require.Len(t, tenantOf, callers*perCaller)

	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 2 * callers * perCaller, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, callers*perCaller, "every run's step is queued")
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
