package engine_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// spyStore wraps a store and counts the engine's rounds, so tests can wait
// for rounds of the poller or of housekeeping rather than for time. It
// passes store.Elector through; over a store without one it makes every
// worker lead, as the engine does.
type spyStore struct {
	store.Store
	polls  atomic.Int64 // FireTimers calls: the poller makes one a round
	sweeps atomic.Int64 // RescueExpired calls finished: a leader makes one a round
	stores atomic.Int64 // CompleteTasks and CompleteAndContinue calls finished
	beats  atomic.Int64 // Heartbeat calls finished
	prunes atomic.Int64 // PruneRuns calls finished
	subs   atomic.Int64 // Subscribe calls
	// beforeRetire, when set, runs at the start of RetireWorker.
	beforeRetire func()
	// holdCompletions, when set, makes CompleteTasks and
	// CompleteAndContinue wait until it is closed.
	holdCompletions chan struct{}
	claimed         atomic.Int64 // tasks claimed
	// claimDelay, when set, makes each claim take at least this long, and
	// claimsAtOnce keeps the most claims seen under way together.
	claimDelay   time.Duration
	claimsNow    atomic.Int64
	claimsAtOnce atomic.Int64

	mu    sync.Mutex
	calls []string // the poller's calls in order: "claim" and "timers"
}

func (s *spyStore) record(call string) {
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
}

// pollerCalls returns the poller's calls so far, in order.
func (s *spyStore) pollerCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// ClaimTasks records a claim and counts the tasks claimed.
func (s *spyStore) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	s.record("claim")
	keepMost(&s.claimsAtOnce, s.claimsNow.Add(1))
	defer s.claimsNow.Add(-1)
	time.Sleep(s.claimDelay)
	tasks, err := s.Store.ClaimTasks(ctx, p)
	s.claimed.Add(int64(len(tasks)))
	return tasks, err
}

// CompleteTasks counts a batch of results stored.
func (s *spyStore) CompleteTasks(ctx context.Context, results []store.TaskResult) ([]store.CompletionOutcome, error) {
	if s.holdCompletions != nil {
		<-s.holdCompletions
	}
	defer s.stores.Add(1)
	return s.Store.CompleteTasks(ctx, results)
}

// CompleteAndContinue counts a batch of results stored.
func (s *spyStore) CompleteAndContinue(ctx context.Context, results []store.TaskResult, p store.ClaimParams) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	if s.holdCompletions != nil {
		<-s.holdCompletions
	}
	defer s.stores.Add(1)
	return s.Store.CompleteAndContinue(ctx, results, p)
}

var _ store.Elector = (*spyStore)(nil)

func spy(st store.Store) *spyStore { return &spyStore{Store: st} }

// FireTimers counts a poller round.
func (s *spyStore) FireTimers(ctx context.Context, limit int) (int, error) {
	s.record("timers")
	s.polls.Add(1)
	return s.Store.FireTimers(ctx, limit)
}

// RescueExpired counts a housekeeping round once it is done.
func (s *spyStore) RescueExpired(ctx context.Context, limit int) (int, error) {
	defer s.sweeps.Add(1)
	return s.Store.RescueExpired(ctx, limit)
}

// waitRounds waits until n more rounds of counter have happened, or ctx ends.
func waitRounds(ctx context.Context, counter *atomic.Int64, n int64) error {
	target := counter.Load() + n
	for counter.Load() < target {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

func (s *spyStore) Heartbeat(ctx context.Context, worker string, ttl time.Duration, runs []store.HeldAttempt) ([]dag.RunID, error) {
	defer s.beats.Add(1)
	return s.Store.Heartbeat(ctx, worker, ttl, runs)
}

func (s *spyStore) RetireWorker(ctx context.Context, worker string, release bool) (int, error) {
	if s.beforeRetire != nil {
		s.beforeRetire()
	}
	return s.Store.RetireWorker(ctx, worker, release)
}

func (s *spyStore) PruneRuns(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	defer s.prunes.Add(1)
	return s.Store.PruneRuns(ctx, cutoff, limit)
}

func (s *spyStore) Lead(ctx context.Context, lease time.Duration) (bool, error) {
	if el, ok := s.Store.(store.Elector); ok {
		return el.Lead(ctx, lease)
	}
	return true, nil
}

func (s *spyStore) Resign(ctx context.Context) error {
	if el, ok := s.Store.(store.Elector); ok {
		return el.Resign(ctx)
	}
	return nil
}

func (s *spyStore) NameLeader(ctx context.Context, worker string) error {
	if el, ok := s.Store.(store.Elector); ok {
		return el.NameLeader(ctx, worker)
	}
	return nil
}

func (s *spyStore) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	s.subs.Add(1)
	return s.Store.Subscribe(ctx)
}

// keepMost raises most to n if n is more.
func keepMost(most *atomic.Int64, n int64) {
	for seen := most.Load(); n > seen && !most.CompareAndSwap(seen, n); seen = most.Load() {
	}
}
