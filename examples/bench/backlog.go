package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/dagenhq/dagen/bench/figures"
	"github.com/dagenhq/dagen/examples/bench/flows"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

const (
	// backlog1m: this many single-step runs queued before the engine
	// starts, over this many tenants, each run's tenant drawn from a Zipf
	// distribution of this exponent (a few tenants hold most of the
	// backlog, thousands hold a few runs each).
	backlogRuns    = 1_000_000
	backlogTenants = 10_000
	backlogZipfS   = 1.1
)

// backlog enqueues backlog1m's runs, then drains them as throughput does,
// timing every claim that took tasks: the claim's p50 and p99 in the
// first, middle and last tenth of the drain.
func (b *bench) backlog(ctx context.Context, res *Result) error {
	runs, tenants := b.scaled(backlogRuns), max(1, b.scaled(backlogTenants))
	res.Tenants = tenants
	claims := &claimTimes{}
	b.claims = claims
	defer func() { b.claims = nil }()
	err := b.throughputOf(ctx, res, runs, 1, 1, func(w *worker) error {
		if err := enqueueBacklog(ctx, w.e, runs, tenants); err != nil {
			return err
		}
		claims.begin()
		return nil
	})
	if err != nil {
		return err
	}
	start, mid, end := claims.tenths()
	res.ClaimStartP50Ms, res.ClaimStartP99Ms = figures.Percentiles(start)
	res.ClaimMidP50Ms, res.ClaimMidP99Ms = figures.Percentiles(mid)
	res.ClaimEndP50Ms, res.ClaimEndP99Ms = figures.Percentiles(end)
	for _, p := range []*float64{&res.ClaimStartP50Ms, &res.ClaimStartP99Ms, &res.ClaimMidP50Ms, &res.ClaimMidP99Ms, &res.ClaimEndP50Ms, &res.ClaimEndP99Ms} {
		*p = figures.Round(*p, 2)
	}
	return nil
}

// enqueueBacklog triggers runs single-step runs, each for one of tenants
// tenants drawn from a Zipf distribution (the same draw every time).
func enqueueBacklog(ctx context.Context, e *engine.Engine, runs, tenants int) error {
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), backlogZipfS, 1, uint64(tenants-1))
	reqs := make([]engine.TriggerRequest, 0, triggerChunk)
	for i := 0; i < runs; i += triggerChunk {
		reqs = reqs[:0]
		for j := i; j < min(runs, i+triggerChunk); j++ {
			tenant := fmt.Sprintf("backlog-%d", zipf.Uint64())
			reqs = append(reqs, engine.TriggerRequest{Workflow: singleName, Tenant: tenant, Input: flows.Single{N: j}})
		}
		if _, err := e.TriggerMany(ctx, reqs); err != nil {
			return fmt.Errorf("enqueue %d %s runs: %w", runs, singleName, err)
		}
	}
	return nil
}

// claimTimes records the claims that took tasks: when each ended and how
// long it took.
type claimTimes struct {
	mu    sync.Mutex
	since time.Time
	at    []time.Duration // since since
	took  []float64       // ms
}

// begin starts the record: claims before it are not kept.
func (c *claimTimes) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.since, c.at, c.took = time.Now(), c.at[:0], c.took[:0]
}

func (c *claimTimes) add(began time.Time) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since.IsZero() {
		return
	}
	c.at = append(c.at, now.Sub(c.since))
	c.took = append(c.took, float64(now.Sub(began))/float64(time.Millisecond))
}

// tenths returns the durations of the claims that ended in the first,
// middle and last tenth of the time between the first and the last claim.
func (c *claimTimes) tenths() (start, mid, end []float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.at) == 0 {
		return nil, nil, nil
	}
	first, last := c.at[0], c.at[len(c.at)-1]
	span := last - first
	for i, at := range c.at {
		switch f := float64(at-first) / float64(max(span, 1)); {
		case f <= 0.1:
			start = append(start, c.took[i])
		case f >= 0.45 && f <= 0.55:
			mid = append(mid, c.took[i])
		case f >= 0.9:
			end = append(end, c.took[i])
		}
	}
	return start, mid, end
}

// timedStore is a pgstore whose claims that take tasks are timed. It
// passes leader election through, as a wrapping store must.
type timedStore struct {
	*pgstore.Store
	claims *claimTimes
}

var _ store.Elector = timedStore{}

// ClaimTasks implements store.Store: the pgstore's claim, timed.
func (s timedStore) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	began := time.Now()
	out, err := s.Store.ClaimTasks(ctx, p)
	if err == nil && len(out) > 0 {
		s.claims.add(began)
	}
	return out, err
}
