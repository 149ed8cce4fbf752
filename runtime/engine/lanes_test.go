package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// heldStore is a memstore whose completions of batches that hold a result
// of one of the held runs wait until release is closed.
type heldStore struct {
	*memstore.Store
	release chan struct{}
	mu      sync.Mutex
	held    map[dag.RunID]bool
	waiting atomic.Int64 // completions waiting for release
}

func (s *heldStore) hold(ids []dag.RunID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.held[id] = true
	}
}

// wait waits for release when results holds a result of a held run.
func (s *heldStore) wait(results []store.TaskResult) {
	s.mu.Lock()
	held := false
	for _, r := range results {
		held = held || s.held[r.RunID]
	}
	s.mu.Unlock()
	if held {
		s.waiting.Add(1)
		<-s.release
	}
}

func (s *heldStore) CompleteTasks(ctx context.Context, results []store.TaskResult) ([]store.CompletionOutcome, error) {
	s.wait(results)
	return s.Store.CompleteTasks(ctx, results)
}

func (s *heldStore) CompleteAndContinue(ctx context.Context, results []store.TaskResult, p store.ClaimParams) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	s.wait(results)
	return s.Store.CompleteAndContinue(ctx, results, p)
}

// heldEngine starts an engine of def with concurrency slots over a
// heldStore. release lets the held completions through; the test's cleanup
// calls it when the test did not.
func heldEngine(ctx context.Context, t *testing.T, def *engine.Definition, concurrency int) (e *engine.Engine, st *heldStore, release func()) {
	t.Helper()
	st = &heldStore{Store: memstore.New(nil), release: make(chan struct{}), held: map[dag.RunID]bool{}}
	e, err := engine.New(st, &engine.Config{WorkerID: "w1", Concurrency: concurrency, PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Start(ctx))
	var once sync.Once
	release = func() { once.Do(func() { close(st.release) }) }
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e, st, release
}

// holdBacklog triggers reqs as a backlog whose completions the store
// holds, and waits until it fills every slot but the one kept for light
// tenants (ran counts the backlog's steps that ran) and its results wait
// for the store. The runs are held before any can reach a completer: the
// engine stands still while they are created.
func holdBacklog(ctx context.Context, t *testing.T, e *engine.Engine, st *heldStore, reqs []engine.TriggerRequest, ran *atomic.Int64, concurrency int) []dag.RunID {
	t.Helper()
	require.NoError(t, e.Stop(ctx))
	ids, err := e.TriggerMany(ctx, reqs)
	require.NoError(t, err)
	st.hold(ids)
	require.NoError(t, e.Start(ctx))
	kept := concurrency / 64
	require.Eventually(t, func() bool { return ran.Load() == int64(concurrency-kept) }, 10*time.Second, time.Millisecond,
		"the backlog's steps ran: %d", ran.Load())
	// Their completions reach the store a moment after the steps ran.
	require.Eventually(t, func() bool { return st.waiting.Load() > 0 }, 10*time.Second, time.Millisecond,
		"the backlog's results wait for the store")
	return ids
}

// requireCompleted waits for the runs ids, which must complete.
func requireCompleted(ctx context.Context, t *testing.T, e *engine.Engine, ids []dag.RunID) {
	t.Helper()
	for _, id := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}
}

// TestLightTenantPassesABacklog runs tenant A's runs, one at a time,
// while tenant B's runs hold every slot B may take and every completer
// that stores B's results is stuck: A's first step starts in the slot kept
// for light tenants, and its result is stored by the light lane, so A's
// runs finish while B waits. No more steps run at once than Concurrency,
// and B never takes the kept slot. (The store is a memstore whose
// completions of B's results wait for the test: the engine's lanes are
// what is tested, and they are the same over any store.)
func TestLightTenantPassesABacklog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const concurrency = 64
	var running, most, ranB atomic.Int64
	def := &engine.Definition{Name: "work", Steps: []engine.Step{
		{Name: "s", Run: fn(func(_ context.Context, in int, _ []string) (string, error) {
			now := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			if in >= 0 {
				ranB.Add(1)
			}
			return "done", nil
		})},
	}}
	e, st, release := heldEngine(ctx, t, def, concurrency)

	reqs := make([]engine.TriggerRequest, 300)
	for i := range reqs {
		reqs[i] = engine.TriggerRequest{Workflow: "work", Tenant: "b", Input: i}
	}
	// B fills every slot but the one kept for light tenants: its steps
	// ran, and their results wait for the store.
	bIDs := holdBacklog(ctx, t, e, st, reqs, &ranB, concurrency)

	for i := range 5 {
		res, err := e.Run(ctx, "work", "a", -1-i)
		require.NoError(t, err, "A's run %d finishes while B's results wait", i)
		require.Equal(t, store.RunCompleted, res.Status)
	}
	kept := concurrency / 64
	require.Equal(t, int64(concurrency-kept), ranB.Load(), "B did not take the kept slot")

	release()
	requireCompleted(ctx, t, e, bIDs)
	require.LessOrEqual(t, most.Load(), int64(concurrency), "steps at once")
}

// TestLightTenantPassesManyTenantsBacklog is TestLightTenantPassesABacklog
// with the backlog spread over many tenants, claimed in turns, so that each
// holds one task here, as a light tenant does: their claims say they have
// more queued (store.ClaimedTask.TenantQueued), so their results do not go
// by the light lane, and A's result does not wait behind theirs there.
func TestLightTenantPassesManyTenantsBacklog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const concurrency, tenants = 64, 200
	var ranBacklog atomic.Int64
	def := &engine.Definition{Name: "work", Steps: []engine.Step{
		{Name: "s", Run: fn(func(_ context.Context, in int, _ []string) (string, error) {
			if in >= 0 {
				ranBacklog.Add(1)
			}
			return "done", nil
		})},
	}}
	e, st, release := heldEngine(ctx, t, def, concurrency)

	// Three runs of each of 200 tenants: a claim takes one task of each.
	reqs := make([]engine.TriggerRequest, 3*tenants)
	for i := range reqs {
		reqs[i] = engine.TriggerRequest{Workflow: "work", Tenant: fmt.Sprintf("t%03d", i%tenants), Input: i}
	}
	ids := holdBacklog(ctx, t, e, st, reqs, &ranBacklog, concurrency)

	for i := range 5 {
		runCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := e.Run(runCtx, "work", "a", -1-i)
		cancel()
		require.NoError(t, err, "A's run %d finishes while the backlog's results wait", i)
		require.Equal(t, store.RunCompleted, res.Status)
	}

	release()
	requireCompleted(ctx, t, e, ids)
}
