package groupcommit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// recordingCreate is a create function for Group that records the
// runs of each call, and blocks each call until release says so when
// gated.
type recordingCreate struct {
	mu      sync.Mutex
	batches [][]dag.RunID
	params  []store.ClaimParams
	started chan struct{}        // a call began (buffered)
	release chan struct{}        // each call waits for a value when gated
	fail    func(dag.RunID) bool // a run that fails any call it is in
}

func newRecordingCreate(gated bool) *recordingCreate {
	rc := &recordingCreate{started: make(chan struct{}, 100)}
	if gated {
		rc.release = make(chan struct{})
	}
	return rc
}

// create records the call and starts the first root of each tenant's
// first run, up to the limit.
func (rc *recordingCreate) create(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	ids := make([]dag.RunID, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	rc.mu.Lock()
	rc.batches = append(rc.batches, ids)
	rc.params = append(rc.params, p)
	rc.mu.Unlock()
	rc.started <- struct{}{}
	if rc.release != nil {
		select {
		case <-rc.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for _, id := range ids {
		if rc.fail != nil && rc.fail(id) {
			return nil, errors.New("bad run " + id.String())
		}
	}
	// As the store does: the first root of each tenant, up to the limit.
	var started []store.ClaimedTask
	tenants := map[string]bool{}
	for _, r := range runs {
		if len(started) < p.Limit && !tenants[r.Tenant] {
			tenants[r.Tenant] = true
			started = append(started, store.ClaimedTask{RunID: r.ID, Tenant: r.Tenant, Step: "a"})
		}
	}
	return started, nil
}

// doCreate is a CreateRuns call in g.
func doCreate(g *Group, ctx context.Context, runs []store.NewRun, create CreateFunc) error {
	_, err := g.Do(ctx, runs, store.ClaimParams{}, create)
	return err
}

func (rc *recordingCreate) calls() [][]dag.RunID {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([][]dag.RunID(nil), rc.batches...)
}

func plainRuns(n int) []store.NewRun {
	runs := make([]store.NewRun, n)
	for i := range runs {
		runs[i] = store.NewRun{ID: dag.NewRunID(), Workflow: "w", Tenant: "t"}
	}
	return runs
}

// waitStarted waits for rc's next call to begin.
func waitStarted(t *testing.T, rc *recordingCreate) {
	t.Helper()
	select {
	case <-rc.started:
	case <-time.After(5 * time.Second):
		t.Fatal("no batch began within 5s")
	}
}

// recvErr receives a call's error, failing the test after 5s.
func recvErr(t *testing.T, errs <-chan error) error {
	t.Helper()
	select {
	case err := <-errs:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("a call did not return within 5s")
		return nil
	}
}

// waitIdle waits until nothing is being written in g (its writer ends
// after the last batch's calls have their answers).
func waitIdle(t *testing.T, g *Group) {
	t.Helper()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return !g.busy
	}, 5*time.Second, time.Millisecond, "the group's writer never ended")
}

// waitQueued waits until n calls wait in g's queue.
func waitQueued(t *testing.T, g *Group, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.waiting) == n
	}, 5*time.Second, time.Millisecond)
}

func TestCreateGroupWritesCallsMadeMeanwhileTogether(t *testing.T) {
	var g Group
	rc := newRecordingCreate(true)
	first := plainRuns(1)
	errs := make(chan error, 10)
	go func() { errs <- doCreate(&g, context.Background(), first, rc.create) }()
	waitStarted(t, rc) // the first call is being written alone
	var later [][]store.NewRun
	for range 5 {
		runs := plainRuns(2)
		later = append(later, runs)
		go func() { errs <- doCreate(&g, context.Background(), runs, rc.create) }()
	}
	waitQueued(t, &g, 5)
	rc.release <- struct{}{} // the first batch ends
	waitStarted(t, rc)       // the second begins
	rc.release <- struct{}{}
	for range 6 {
		require.NoError(t, recvErr(t, errs))
	}
	calls := rc.calls()
	require.Len(t, calls, 2, "one batch for the first call, one for the five made while it was written")
	assert.Equal(t, []dag.RunID{first[0].ID}, calls[0])
	var want []dag.RunID
	for _, runs := range later {
		for _, r := range runs {
			want = append(want, r.ID)
		}
	}
	assert.ElementsMatch(t, want, calls[1])
	waitIdle(t, &g) // the writer ends once the queue is empty
}

func TestCreateGroupWritesEachCallAloneWhenTheBatchFails(t *testing.T) {
	var g Group
	rc := newRecordingCreate(true)
	bad := plainRuns(1)
	rc.fail = func(id dag.RunID) bool { return id == bad[0].ID }
	blocker := plainRuns(1)
	done := make(chan error, 1)
	go func() { done <- doCreate(&g, context.Background(), blocker, rc.create) }()
	waitStarted(t, rc)
	good := plainRuns(3)
	badErr, goodErr := make(chan error, 1), make(chan error, 1)
	go func() { badErr <- doCreate(&g, context.Background(), bad, rc.create) }()
	waitQueued(t, &g, 1)
	go func() { goodErr <- doCreate(&g, context.Background(), good, rc.create) }()
	waitQueued(t, &g, 2)
	close(rc.release) // every call goes through from now on
	require.NoError(t, recvErr(t, done))
	assert.ErrorContains(t, recvErr(t, badErr), "bad run", "the call with the bad run fails")
	assert.NoError(t, recvErr(t, goodErr), "the other call of its batch is written again alone, and succeeds")
	calls := rc.calls()
	require.Len(t, calls, 4, "the blocker, the failed batch of two calls, then each call alone")
	assert.Len(t, calls[1], 4)
	assert.ElementsMatch(t, [][]dag.RunID{{bad[0].ID}, {good[0].ID, good[1].ID, good[2].ID}}, calls[2:])
}

func TestCreateGroupDropsACallWhoseContextEndsInTheQueue(t *testing.T) {
	var g Group
	rc := newRecordingCreate(true)
	done := make(chan error, 1)
	go func() { done <- doCreate(&g, context.Background(), plainRuns(1), rc.create) }()
	waitStarted(t, rc)
	ctx, cancel := context.WithCancel(context.Background())
	left := plainRuns(1)
	leftErr := make(chan error, 1)
	go func() { leftErr <- doCreate(&g, ctx, left, rc.create) }()
	waitQueued(t, &g, 1)
	cancel()
	assert.ErrorIs(t, recvErr(t, leftErr), context.Canceled)
	close(rc.release)
	require.NoError(t, recvErr(t, done))
	waitIdle(t, &g)
	for _, c := range rc.calls() {
		assert.NotContains(t, c, left[0].ID, "a call that left the queue creates nothing")
	}
}

func TestCreateGroupCancelsABatchOnceEveryCallGaveUp(t *testing.T) {
	var g Group
	rc := newRecordingCreate(true) // never released: only a cancelled batch ends
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel1()
	defer cancel2()
	blockerCtx, cancelBlocker := context.WithCancel(context.Background())
	blockerErr := make(chan error, 1)
	go func() { blockerErr <- doCreate(&g, blockerCtx, plainRuns(1), rc.create) }()
	waitStarted(t, rc)
	errs := make(chan error, 2)
	go func() { errs <- doCreate(&g, ctx1, plainRuns(1), rc.create) }()
	waitQueued(t, &g, 1)
	go func() { errs <- doCreate(&g, ctx2, plainRuns(1), rc.create) }()
	waitQueued(t, &g, 2)
	cancelBlocker() // the first call, written alone, gives up: its write is cancelled
	assert.ErrorIs(t, recvErr(t, blockerErr), context.Canceled)
	waitStarted(t, rc) // the batch of the two calls is being written
	cancel1()
	select {
	case err := <-errs:
		t.Fatalf("a call returned (%v) while its batch was being written, which another call still waits for", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel2()
	// Both gave up: the batch's context ends, its create returns, each call
	// has its answer, and the writer, with each call's context ended,
	// writes none of them again.
	assert.ErrorIs(t, recvErr(t, errs), context.Canceled)
	assert.ErrorIs(t, recvErr(t, errs), context.Canceled)
	waitIdle(t, &g)
	assert.Len(t, rc.calls(), 2, "the first call and the batch of two, no call again alone")
}

// TestCreateGroupAnswersACallThatGaveUpDuringItsBatch: a StartRuns call
// whose context ends while its batch is written still gets the roots the
// batch started for it, so that its worker runs them.
func TestCreateGroupAnswersACallThatGaveUpDuringItsBatch(t *testing.T) {
	var g Group
	rc := newRecordingCreate(true)
	p := store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute}
	done := make(chan error, 1)
	go func() { done <- doCreate(&g, context.Background(), plainRuns(1), rc.create) }()
	waitStarted(t, rc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type answer struct {
		claimed []store.ClaimedTask
		err     error
	}
	gaveUp, other := make(chan answer, 1), make(chan answer, 1)
	runs := plainRuns(1)
	go func() {
		claimed, err := g.Do(ctx, runs, p, rc.create)
		gaveUp <- answer{claimed, err}
	}()
	waitQueued(t, &g, 1)
	go func() {
		claimed, err := g.Do(context.Background(), plainRuns(1), p, rc.create)
		other <- answer{claimed, err}
	}()
	waitQueued(t, &g, 2)
	rc.release <- struct{}{} // the first call ends
	waitStarted(t, rc)       // the batch of the two starts
	cancel()
	rc.release <- struct{}{} // the other call still waits: the batch goes on and commits
	a := <-gaveUp
	require.NoError(t, a.err, "the batch committed: the call's answer is its outcome")
	assert.Equal(t, []dag.RunID{runs[0].ID}, claimedRuns(a.claimed), "the root started for it is handed to it")
	require.NoError(t, recvErr(t, done))
	b := <-other
	require.NoError(t, b.err)
	waitIdle(t, &g)
}

func TestCreateGroupBatchesHoldAtMostMaxGroupRuns(t *testing.T) {
	var g Group
	rc := newRecordingCreate(true)
	errs := make(chan error, 10)
	go func() { errs <- doCreate(&g, context.Background(), plainRuns(1), rc.create) }()
	waitStarted(t, rc)
	big := maxGroupRuns/2 + 1
	for i := range 3 {
		go func() { errs <- doCreate(&g, context.Background(), plainRuns(big), rc.create) }()
		waitQueued(t, &g, i+1)
	}
	close(rc.release)
	for range 4 {
		require.NoError(t, recvErr(t, errs))
	}
	calls := rc.calls()
	require.Len(t, calls, 4, "two calls of more than half the cap never share a batch")
	for _, c := range calls[1:] {
		assert.Len(t, c, big)
	}
}

func TestGroupableTakesCallsABatchServesAsTheyAsk(t *testing.T) {
	none := store.ClaimParams{}
	assert.True(t, Groupable(plainRuns(3), none))
	assert.False(t, Groupable(nil, none))
	assert.True(t, Groupable(plainRuns(maxGroupedCallRuns), none))
	assert.False(t, Groupable(plainRuns(maxGroupedCallRuns+1), none), "a call this large goes by itself")
	keyed := plainRuns(2)
	keyed[1].Key = "k"
	assert.True(t, Groupable(keyed, none), "a batch creates one run a key, as one call does")
	capped := plainRuns(2)
	capped[0].Concurrency = 1
	assert.False(t, Groupable(capped, none), "a concurrency cap takes a transaction of its own")
	twoTenants := plainRuns(3)
	twoTenants[2].Tenant = "other"
	assert.True(t, Groupable(twoTenants, store.ClaimParams{Worker: "w", Limit: 2}))
	assert.False(t, Groupable(twoTenants, store.ClaimParams{Worker: "w", Limit: 1}),
		"a batch could start a root of each tenant: more than the call's limit")
}

func TestCreateGroupHandsEachStartCallItsOwnRoots(t *testing.T) {
	var g Group
	rc := newRecordingCreate(true)
	p := store.ClaimParams{Worker: "w", Signatures: []string{"s"}, Lease: time.Minute}
	type result struct {
		runs    []store.NewRun
		claimed []store.ClaimedTask
		err     error
	}
	results := make(chan result, 4)
	start := func(runs []store.NewRun, limit int) {
		q := p
		q.Limit = limit
		claimed, err := g.Do(context.Background(), runs, q, rc.create)
		results <- result{runs, claimed, err}
	}
	go start(plainRuns(1), 1)
	waitStarted(t, rc)
	a, b := plainRuns(2), plainRuns(3)
	for i, tenant := range []string{"x", "y"} {
		a[i].Tenant = tenant
	}
	for i, tenant := range []string{"y", "z", "w"} {
		b[i].Tenant = tenant
	}
	go start(a, 2)
	waitQueued(t, &g, 1)
	created := make(chan error, 1)
	go func() { created <- doCreate(&g, context.Background(), plainRuns(1), rc.create) }()
	waitQueued(t, &g, 2)
	go start(b, 3)
	waitQueued(t, &g, 3)
	close(rc.release)
	require.NoError(t, recvErr(t, created))
	got := map[dag.RunID][]store.ClaimedTask{}
	for range 3 {
		r := <-results
		require.NoError(t, r.err)
		for _, ct := range r.claimed {
			assert.True(t, slices.ContainsFunc(r.runs, func(nr store.NewRun) bool { return nr.ID == ct.RunID }),
				"a call is handed only roots of its own runs")
		}
		got[r.runs[0].ID] = r.claimed
	}
	calls, params := rc.calls(), rc.params
	require.Len(t, calls, 3, "the first start, then a and b together, then the creation that claims nothing")
	assert.Len(t, calls[1], 5)
	assert.Equal(t, 5, params[1].Limit, "a batch claims up to the sum of its calls' limits")
	assert.Equal(t, p.Signatures, params[1].Signatures)
	assert.Equal(t, 0, params[2].Limit)
	// One root a tenant: a's runs of x and y, then b's of z and w (its run
	// of y is not started: a's was).
	assert.Equal(t, []dag.RunID{a[0].ID, a[1].ID}, claimedRuns(got[a[0].ID]))
	assert.Equal(t, []dag.RunID{b[1].ID, b[2].ID}, claimedRuns(got[b[0].ID]))
}

func claimedRuns(tasks []store.ClaimedTask) []dag.RunID {
	var ids []dag.RunID
	for _, t := range tasks {
		ids = append(ids, t.RunID)
	}
	return ids
}

func TestCreateGroupHandsWhatTheBatchSaysBackToEachCall(t *testing.T) {
	var g Group
	rc := newRecordingCreate(true)
	holder := dag.NewRunID()
	mark := func(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
		started, err := rc.create(ctx, runs, p)
		for i := range runs {
			if runs[i].Key != "" {
				runs[i].Existing = holder
			}
		}
		return started, err
	}
	done := make(chan error, 3)
	go func() { done <- doCreate(&g, context.Background(), plainRuns(1), mark) }()
	waitStarted(t, rc)
	a, b := plainRuns(2), plainRuns(3)
	a[1].Key, b[2].Key = "k1", "k2"
	go func() { done <- doCreate(&g, context.Background(), a, mark) }()
	waitQueued(t, &g, 1)
	go func() { done <- doCreate(&g, context.Background(), b, mark) }()
	waitQueued(t, &g, 2)
	close(rc.release)
	for range 3 {
		require.NoError(t, recvErr(t, done))
	}
	require.Len(t, rc.calls(), 2, "a and b went in one batch")
	assert.Equal(t, holder, a[1].Existing)
	assert.Equal(t, holder, b[2].Existing)
	for _, r := range []store.NewRun{a[0], b[0], b[1]} {
		assert.True(t, r.Existing.IsZero(), "run %s has no key", r.ID)
	}
}
