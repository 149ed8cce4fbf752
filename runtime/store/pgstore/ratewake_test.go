package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestFireTimersAdmitsForARateLimit checks that FireTimers reads a due
// wake of a rate limit's bucket (a row with no run and no task) and admits
// the task that can take the bucket's token, while the next one waits for
// the limit's next token, out of the fair queue.
func TestFireTimersAdmitsForARateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, nil, 4)
	require.NoError(t, s.PutRateLimits(ctx, []store.RateLimit{{Name: "stripe", Rate: 0.001, Burst: 1}}))
	newRun := func() dag.RunID {
		r := store.NewRun{ID: dag.NewRunID(), Workflow: "pay", Fingerprint: "fp", Tenant: "acme", Input: []byte(`{}`),
			Tasks: []store.NewTask{{Name: "charge", Kind: store.KindStep, Signature: "pay.charge", MaxAttempts: 3, RateLimit: "stripe"}}}
		require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
		return r.ID
	}
	first, second := newRun(), newRun()
	_, err := s.FireTimers(ctx, 10)
	require.NoError(t, err)

	places, err := s.QueuePlaces(ctx, first, []string{"charge"})
	require.NoError(t, err)
	require.Empty(t, places["charge"].RateLimited, "the first run took the bucket's token")
	places, err = s.QueuePlaces(ctx, second, []string{"charge"})
	require.NoError(t, err)
	require.Regexp(t, `^rate limit stripe: next token in \d+m\d+(\.\d+)?s$`, places["charge"].RateLimited)
	require.Zero(t, places["charge"].Ahead)
}

// TestParkedTasksRaceAdmissions parks rate-limited tasks from four
// triggering goroutines while four others admit, claim and complete them
// as fast as they can: every task is claimed in the end. An enqueue that
// parked a task while an admission held its bucket's look, and found the
// bucket due already, left the admission to drop the look, and the task
// waited for ever; the admission now keeps the look of a bucket an
// enqueue touched meanwhile (dagen_rate_wakes.touched).
func TestParkedTasksRaceAdmissions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, nil, 12)
	require.NoError(t, s.PutRateLimits(ctx, []store.RateLimit{{Name: "wide", Rate: 1e6, Burst: 1e6}}))
	const triggers, each = 4, 150
	var wg sync.WaitGroup
	var created atomic.Int64
	for g := range triggers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tk := step("a")
				tk.RateLimit, tk.RateKey = "wide", fmt.Sprint("k", (g+i)%3)
				if err := s.CreateRuns(ctx, []store.NewRun{newRun("wf", "t", tk)}); err != nil {
					t.Error(err)
					return
				}
				created.Add(1)
			}
		}()
	}
	var claimed atomic.Int64
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.FireTimers(ctx, 100); err != nil {
					t.Error(err)
					return
				}
				c, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 50, Lease: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				claimed.Add(int64(len(c)))
			}
		}()
	}
	wg.Wait()
	// Once every trigger is in, the workers get a while to finish: the
	// looks a lost admission would hold come back within a second.
	require.Eventually(t, func() bool { return claimed.Load() == triggers*each }, 30*time.Second, 10*time.Millisecond,
		"claimed %d of %d", claimed.Load(), triggers*each)
	close(stop)
	workers.Wait()
}
