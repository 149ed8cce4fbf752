package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestFireTimersAdmitsForARateLimit checks that FireTimers reads a due
// wake of a rate limit's bucket (a row with no run and no task) and admits
// the task that can take the bucket's token, while the next one waits for
// the limit's next token, out of the fair queue. (A first run takes the
// full bucket's token straight in, and is claimed, so that the two wait.)
func TestFireTimersAdmitsForARateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	s := newStore(t, clock.Now, 4)
	require.NoError(t, s.PutRateLimits(ctx, []store.RateLimit{{Name: "stripe", Rate: 0.001, Burst: 1}}))
	newRun := func() dag.RunID {
		r := store.NewRun{ID: dag.NewRunID(), Workflow: "pay", Fingerprint: "fp", Tenant: "acme", Input: []byte(`{}`),
			Tasks: []store.NewTask{{Name: "charge", Kind: store.KindStep, Signature: "pay.charge", MaxAttempts: 3, RateLimit: "stripe"}}}
		require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
		return r.ID
	}
	newRun()
	taken, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 10, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, taken, 1)
	first, second := newRun(), newRun()
	places, err := s.QueuePlaces(ctx, first, []string{"charge"})
	require.NoError(t, err)
	require.NotEmpty(t, places["charge"].RateLimited, "the bucket is empty: the first waits")
	clock.Advance(1000 * time.Second) // one token
	admitted, err := s.FireTimers(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, admitted)

	places, err = s.QueuePlaces(ctx, first, []string{"charge"})
	require.NoError(t, err)
	require.Empty(t, places["charge"].RateLimited, "the first run took the bucket's token")
	places, err = s.QueuePlaces(ctx, second, []string{"charge"})
	require.NoError(t, err)
	require.Regexp(t, `^rate limit stripe: next token in \d+m\d+(\.\d+)?s$`, places["charge"].RateLimited)
	require.Zero(t, places["charge"].Ahead)
}

// TestParkedTasksRaceAdmissions parks rate-limited tasks from four
// triggering goroutines while four others admit, claim and complete them
// as fast as they can: every task is claimed in the end, and the workers
// never stall. It stresses the wake-ups of parked tasks as a whole; the
// narrow race it was written for (an enqueue parking a task while an
// admission holds its bucket's look) is too rare here to be caught every
// time, and TestAdmissionKeepsATouchedLook checks its guard. A burst of one
// parks a task whenever its key's entry in the fair queue is not claimed
// yet (a task with room goes straight in), and the rate refills at once.
func TestParkedTasksRaceAdmissions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, nil, 12)
	require.NoError(t, s.PutRateLimits(ctx, []store.RateLimit{{Name: "wide", Rate: 1e6, Burst: 1}}))
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
	var claimed, admitted atomic.Int64
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
				n, err := s.FireTimers(ctx, 100)
				if err != nil {
					t.Error(err)
					return
				}
				admitted.Add(int64(n))
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
	// Once every trigger is in, the workers go on until every task is
	// claimed. A lost wake-up stops them for good, while a loaded machine
	// only slows them (each admission lets one task of a key in), so the
	// test fails on a stall, not on a total time: the looks a lost
	// admission would hold come back within a second.
	const stall = 30 * time.Second
	last, progress := claimed.Load(), time.Now()
	for n := claimed.Load(); n < triggers*each; n = claimed.Load() {
		if n != last {
			last, progress = n, time.Now()
		}
		if time.Since(progress) > stall {
			close(stop)
			workers.Wait()
			t.Fatalf("claimed %d of %d, none for %s", n, triggers*each, stall)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	workers.Wait()
	require.Positive(t, admitted.Load(), "tasks were parked and admitted")
	t.Logf("%d of %d tasks admitted after they waited", admitted.Load(), triggers*each)
}

// TestStraightInCountsWhatItCannotSee: an enqueue whose statement began
// before another let tasks straight in, and that locks the bucket once
// the other committed, cannot see the other's entries (its snapshot is
// older): it must park its tasks, not count the bucket without them. The
// schema's flags are read through a view that sleeps, which holds each
// enqueue between its snapshot and the bucket's lock; the second begins
// while the first sleeps and locks after it committed.
func TestStraightInCountsWhatItCannotSee(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	s := freshStore(t, clock.Now, 8) // its flags table is swapped for a view
	const burst = 20
	require.NoError(t, s.PutRateLimits(ctx, []store.RateLimit{{Name: "stripe", Rate: 0.001, Burst: burst}}))
	rated := func(n int) []store.NewRun {
		runs := make([]store.NewRun, n)
		for i := range runs {
			tk := step("a")
			tk.RateLimit, tk.RateKey = "stripe", "acct"
			runs[i] = newRun("wf", "t", tk)
		}
		return runs
	}
	// The bucket is made, full, by the first creation, whose run takes a
	// token straight in.
	require.NoError(t, s.CreateRuns(ctx, rated(1)))

	// A view with one table in its FROM, so that a creation's MarkFlow
	// can update through it (a no-op: the flags are set).
	_, err := s.Pool().Exec(ctx, `ALTER TABLE dagen_flow_flags RENAME TO dagen_flow_flags_table;
		CREATE VIEW dagen_flow_flags AS SELECT f.* FROM dagen_flow_flags_table f WHERE (SELECT true FROM pg_sleep(0.3))`)
	require.NoError(t, err)
	// Two stores, as two workers: one store's creations at once share a
	// transaction.
	pool, err := pgxpool.NewWithConfig(ctx, s.Pool().Config().Copy())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	stores := []*pgstore.Store{s, storeOn(t, pool, clock.Now)}
	var wg sync.WaitGroup
	for i, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 100 * time.Millisecond)
			if err := st.CreateRuns(ctx, rated(burst-1)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	_, err = s.Pool().Exec(ctx, `DROP VIEW dagen_flow_flags; ALTER TABLE dagen_flow_flags_table RENAME TO dagen_flow_flags`)
	require.NoError(t, err)

	_, err = s.FireTimers(ctx, 10)
	require.NoError(t, err)
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1000, Lease: time.Hour})
	require.NoError(t, err)
	require.Equal(t, burst, len(claimed), "the bucket's tokens, and not one more")
}
