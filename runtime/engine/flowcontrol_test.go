package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// call is the input of the rate-limited workflow: the account whose
// bucket its call step takes a token from.
type call struct {
	Account string
	N       int
}

// callDef is a workflow whose one step, call, takes a token of limit
// "api" (rate a second, burst) from its account's bucket; run, if set,
// is what the step does.
func callDef(name string, rate float64, burst int, run func(ctx context.Context, in call) error) *engine.Definition {
	return &engine.Definition{
		Name:       name,
		RateLimits: []engine.RateLimit{{Name: "api", Rate: rate, Burst: burst}},
		Steps: []engine.Step{{
			Name: "call",
			RateLimit: &engine.StepRateLimit{Name: "api", Key: func(input []byte) (string, error) {
				var in call
				err := json.Unmarshal(input, &in)
				return in.Account, err
			}},
			Run: func(ctx context.Context, si engine.StepInput) ([]byte, error) {
				in, err := engine.Input[call](si)
				if err != nil {
					return nil, err
				}
				if run != nil {
					return nil, run(ctx, in)
				}
				return nil, nil
			},
		}},
	}
}

// startsOf returns the STARTED times of step in the runs' event logs, by
// run, in the store's clock.
func startsOf(t *testing.T, e *engine.Engine, ids []dag.RunID, step string) map[dag.RunID][]time.Time {
	t.Helper()
	out := make(map[dag.RunID][]time.Time, len(ids))
	for _, id := range ids {
		events, err := e.Events(context.Background(), id)
		require.NoError(t, err)
		for _, ev := range events {
			if ev.Step == step && ev.Type == store.EventStarted {
				out[id] = append(out[id], ev.At)
			}
		}
	}
	return out
}

// mostInWindow returns the most of the sorted times that fall in any
// window [t, t+w).
func mostInWindow(times []time.Time, w time.Duration) int {
	most, j := 0, 0
	for i := range times {
		for j < len(times) && times[j].Sub(times[i]) < w {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

// TestRateLimitAcrossWorkers floods eight workers on Postgres with calls
// under a limit of 50 a second (burst 50) per account, over three
// accounts. The starts, as the store recorded them: in no window of w
// does an account start more than burst + 50·w, and while it has a
// backlog each account starts at no less than 90% of its rate.
//
// Checked once: with the admission's queued units read in LockBuckets'
// snapshot (taken before its wait for the locks), two admissions let the
// same tokens in, and a window held more starts than the limit allows
// (docs/performance.md, "Flow control: rate limits, priorities,
// weights").
func TestRateLimitAcrossWorkers(t *testing.T) {
	// Not in parallel with the package's other tests: the rate each
	// account reaches is what it measures.
	const (
		rate     = 50.0
		burst    = 50 // a second of the rate
		accounts = 3
		perKey   = 200 // four seconds of each account's rate
		settle   = time.Second
	)
	open := pgSchema(t)
	def := callDef("calls", rate, burst, nil)
	var engines []*engine.Engine
	for i := range 8 {
		// Not the worker helper's fast polling: eight workers polling
		// that often under -race, on a machine testing other packages,
		// starved the claims they were there for.
		engines = append(engines, workerWith(t, open(), engine.Config{
			WorkerID: fmt.Sprint("w", i), Concurrency: 4, PollInterval: 20 * time.Millisecond, IdlePollInterval: 20 * time.Millisecond,
			Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond,
		}, def))
	}
	reqs := make([]engine.TriggerRequest, 0, accounts*perKey)
	for n := range perKey {
		for a := range accounts {
			reqs = append(reqs, engine.TriggerRequest{Workflow: "calls", Tenant: fmt.Sprint("t", n%4), Input: call{Account: fmt.Sprint("acct_", a), N: n}})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids, err := engines[0].TriggerMany(ctx, reqs)
	require.NoError(t, err)
	for _, id := range ids {
		_, err := engines[0].Wait(ctx, id)
		require.NoError(t, err)
	}

	starts := startsOf(t, engines[0], ids, "call")
	byKey := make(map[string][]time.Time)
	for i, id := range ids {
		require.Len(t, starts[id], 1, "run %s started its call once", id)
		key := reqs[i].Input.(call).Account
		byKey[key] = append(byKey[key], starts[id][0])
	}
	for key, times := range byKey {
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		for _, w := range []time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond, time.Second} {
			allowed := burst + int(rate*w.Seconds())
			got := mostInWindow(times, w)
			require.LessOrEqual(t, got, allowed, "%s: %d starts in a window of %s, allowed %d", key, got, w, allowed)
		}
		// While it had a backlog, once the first claims have caught up
		// with the admissions (a full bucket waits for them at first, and
		// gains nothing meanwhile): from a second past its first start to
		// its last.
		from := times[0].Add(settle)
		n := len(times) - sort.Search(len(times), func(i int) bool { return !times[i].Before(from) })
		achieved := float64(n-1) / times[len(times)-1].Sub(from).Seconds()
		t.Logf("%s: %d starts in %.2fs; past the first %s, %.1f a second (limit %.0f)",
			key, len(times), times[len(times)-1].Sub(times[0]).Seconds(), settle, achieved, rate)
		// The rate reached is a speed, which only a quiet machine
		// measures: under make test's load on two cores the claims fell
		// behind the admissions (41/s in two runs of 2026-11-29). The
		// windows above hold under any load; the rate is asserted with
		// DAGEN_TEST_RATE=1 (docs/testing.md).
		if os.Getenv("DAGEN_TEST_RATE") != "" {
			require.GreaterOrEqual(t, achieved, 0.9*rate, "%s started at %.1f a second while it had a backlog", key, achieved)
		}
	}
}

// TestRateLimitNoHeadOfLine: tenant B's backlog waiting for a slow limit's
// tokens holds no worker and no place in the fair queue: tenant A's run
// of another workflow, triggered behind it, completes while B's wait.
func TestRateLimitNoHeadOfLine(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		slow := callDef("slow", 1, 1, nil)
		quick := &engine.Definition{Name: "quick", Steps: []engine.Step{{Name: "a", Run: fn(func(context.Context, int, []string) (string, error) { return "ok", nil })}}}
		e := worker(t, open(), "w", slow, quick)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		reqs := make([]engine.TriggerRequest, 200)
		for i := range reqs {
			reqs[i] = engine.TriggerRequest{Workflow: "slow", Tenant: "B", Input: call{Account: "x", N: i}}
		}
		ids, err := e.TriggerMany(ctx, reqs)
		require.NoError(t, err)
		a, err := e.Trigger(ctx, "quick", "A", 1)
		require.NoError(t, err)
		_, err = e.Wait(ctx, a)
		require.NoError(t, err)
		done := 0
		for _, id := range ids {
			st, err := e.Store().RunStatus(ctx, id)
			require.NoError(t, err)
			if st == store.RunCompleted {
				done++
			}
		}
		require.Less(t, done, len(ids)/2, "A's run finished while most of B's waited for tokens")
		places, err := e.Store().QueuePlaces(ctx, ids[len(ids)-1], []string{"call"})
		require.NoError(t, err)
		require.Contains(t, places["call"].RateLimited, "rate limit api (key x): ", "the last of B's says why it waits")
	})
}

// TestCapsAndRateLimitsSurviveRestarts is the scenario of Hatchet's
// PR #4804 (rate limits and concurrency caps that deadlocked after a
// scheduler restart): runs of a workflow capped at 3 at once, whose step
// takes tokens of a limit of 20 a second (burst 2), flood four workers on
// Postgres; mid-flood every worker is lost at once (its loops stop where
// they are: its tasks' leases run out, and the next workers rescue them),
// and four new ones take over. Every run completes; no more than 3 runs
// are ever under way at once, and no window holds more starts than the
// limit allows.
func TestCapsAndRateLimitsSurviveRestarts(t *testing.T) {
	t.Parallel()
	const (
		capped = 3
		rate   = 20.0
		burst  = 2
		runs   = 60
	)
	open := pgSchema(t)
	var mu sync.Mutex
	inFlight := map[string]int{} // run -> executions under way
	most := 0
	def := callDef("capped", rate, burst, func(ctx context.Context, in call) error {
		info, _ := dag.Info(ctx)
		id := info.RunID.String()
		mu.Lock()
		inFlight[id]++
		most = max(most, len(inFlight))
		mu.Unlock()
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		mu.Lock()
		if inFlight[id]--; inFlight[id] == 0 {
			delete(inFlight, id)
		}
		mu.Unlock()
		return ctx.Err()
	})
	def.Concurrency = capped
	def.Steps[0].Retry = engine.RetryPolicy{MaxRetries: 3, Backoff: time.Millisecond}

	startWorkers := func(round string) ([]*engine.Engine, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		var es []*engine.Engine
		for i := range 4 {
			e, err := engine.New(open(), &engine.Config{
				WorkerID: fmt.Sprint(round, i), Concurrency: 4, PollInterval: 5 * time.Millisecond, IdlePollInterval: 5 * time.Millisecond,
				Lease: time.Second, HeartbeatInterval: 20 * time.Millisecond,
			})
			require.NoError(t, err)
			require.NoError(t, e.Register(def))
			require.NoError(t, e.Start(ctx))
			es = append(es, e)
		}
		return es, cancel
	}
	first, lose := startWorkers("a")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reqs := make([]engine.TriggerRequest, runs)
	for i := range reqs {
		reqs[i] = engine.TriggerRequest{Workflow: "capped", Tenant: fmt.Sprint("t", i%3), Input: call{Account: "x", N: i}}
	}
	ids, err := first[0].TriggerMany(ctx, reqs)
	require.NoError(t, err)
	// Mid-flood: a third of the runs done.
	require.Eventually(t, func() bool {
		n, err := first[0].CountRuns(ctx, store.RunFilter{Workflow: "capped", Statuses: []store.RunStatus{store.RunCompleted}})
		return err == nil && n[store.RunCompleted] >= runs/3
	}, time.Minute, 10*time.Millisecond)
	lose() // every worker's loops stop; nothing is released
	second, _ := startWorkers("b")
	t.Cleanup(func() {
		for _, e := range append(first, second...) {
			sctx, scancel := context.WithTimeout(context.Background(), time.Second)
			_ = e.Stop(sctx)
			scancel()
		}
	})
	for _, id := range ids {
		_, err := second[0].Wait(ctx, id)
		require.NoError(t, err, "run %s", id)
	}
	mu.Lock()
	require.LessOrEqual(t, most, capped, "runs under way at once")
	mu.Unlock()
	var times []time.Time
	for _, ts := range startsOf(t, second[0], ids, "call") {
		times = append(times, ts...)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	for _, w := range []time.Duration{100 * time.Millisecond, time.Second} {
		allowed := burst + int(rate*w.Seconds())
		require.LessOrEqual(t, mostInWindow(times, w), allowed, "starts in a window of %s", w)
	}
}

// TestTenantWeightsShareWorkers: four workers on Postgres serve three
// tenants with backlogs, of weights 3, 1 and 1: while all three have
// work, their shares of the starts are within 10% of 3:1:1.
func TestTenantWeightsShareWorkers(t *testing.T) {
	t.Parallel()
	open := pgSchema(t)
	def := &engine.Definition{Name: "work", Steps: []engine.Step{{Name: "a", Run: fn(func(context.Context, int, []string) (string, error) {
		time.Sleep(time.Millisecond)
		return "", nil
	})}}}
	var engines []*engine.Engine
	for i := range 4 {
		engines = append(engines, worker(t, open(), fmt.Sprint("w", i), def))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, engines[0].SetTenantWeight(ctx, "heavy", 3))
	const each = 300
	var reqs []engine.TriggerRequest
	for i := range each {
		for _, tenant := range []string{"heavy", "light1", "light2"} {
			reqs = append(reqs, engine.TriggerRequest{Workflow: "work", Tenant: tenant, Input: i})
		}
	}
	ids, err := engines[0].TriggerMany(ctx, reqs)
	require.NoError(t, err)
	for _, id := range ids {
		_, err := engines[0].Wait(ctx, id)
		require.NoError(t, err)
	}
	type start struct {
		at     time.Time
		tenant string
	}
	var all []start
	starts := startsOf(t, engines[0], ids, "a")
	for i, id := range ids {
		for _, at := range starts[id] {
			all = append(all, start{at, reqs[i].Tenant})
		}
	}
	slices.SortFunc(all, func(a, b start) int { return a.at.Compare(b.at) })
	// While every tenant has work: up to the heavy tenant's last start.
	counts := map[string]int{}
	for _, s := range all {
		counts[s.tenant]++
		if counts["heavy"] == each {
			break
		}
	}
	t.Logf("starts while all three had work: %v", counts)
	for _, light := range []string{"light1", "light2"} {
		ratio := float64(counts["heavy"]) / float64(counts[light])
		require.InDelta(t, 3, ratio, 0.3, "heavy:%s is %.2f, want 3 within 10%%", light, ratio)
	}
}

// TestRateLimitOfAMappedStep: the elements of a mapped step take its
// limit's tokens, one each; the mapped step itself takes none.
func TestRateLimitOfAMappedStep(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() store.Store) {
		def := &engine.Definition{
			Name:       "mapped",
			RateLimits: []engine.RateLimit{{Name: "api", Rate: 1000, Burst: 2}},
			Steps: []engine.Step{
				{Name: "list", OutputType: "[]int", Run: func(context.Context, engine.StepInput) ([]byte, error) {
					return engine.Encode([]int{1, 2, 3, 4, 5})
				}},
				{Name: "each", Parents: req("list"), Each: "list", OutputType: "int", RateLimit: &engine.StepRateLimit{Name: "api"},
					Run: func(_ context.Context, si engine.StepInput) ([]byte, error) {
						v, err := engine.ParentOutput[int](si, "list")
						if err != nil {
							return nil, err
						}
						return engine.Encode(v * 10)
					}},
			},
		}
		e := worker(t, open(), "w", def)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := e.Run(ctx, "mapped", "A", 1)
		require.NoError(t, err)
		var out []int
		require.NoError(t, json.Unmarshal(res.Tasks["each"].Output, &out))
		require.Equal(t, []int{10, 20, 30, 40, 50}, out)
	})
}
