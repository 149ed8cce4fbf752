package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// NewStore returns a fresh, empty store whose clock is now. It is called
// once per test; the store must not share state with other calls.
type NewStore func(t *testing.T, now func() time.Time) store.Store

// epoch is where every test's clock starts.
var epoch = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

// clock is a fake clock the suite moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is one test's store and clock.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	st    store.Store
	clock *clock
}

// Run runs the whole suite against the stores newStore makes, which must
// also be RollBackers. Subtests run in parallel.
func Run(t *testing.T, newStore NewStore) { RunExcept(t, newStore, nil) }

// RunExcept is Run without the cases named in except (as the subtests are
// named, such as "Fleet/QueuePlaces"), each skipped with the reason given:
// for a store whose documented contract differs from one store's there
// (a sharded store's fair queue is one per shard). A name that is no case
// fails the test, so that an exception does not outlive its case.
func RunExcept(t *testing.T, newStore NewStore, except map[string]string) {
	tests := []struct {
		name string
		fn   func(f *fixture)
	}{
		{"CreateAndRead", testCreateAndRead},
		{"CreateRejectsBadRuns", testCreateRejectsBadRuns},
		{"CreateRejectsBadTenants", testCreateRejectsBadTenants},
		{"ClaimCarriesInputAndParents", testClaimCarriesInputAndParents},
		{"ClaimMayLeaveOutKnownInputs", testClaimMayLeaveOutKnownInputs},
		{"ClaimLimitAndWorkflowFilter", testClaimLimitAndWorkflowFilter},
		{"ClaimWeighsExtraSlots", testClaimWeighsExtraSlots},
		{"FanInEnqueuesOnce", testFanInEnqueuesOnce},
		{"SkipResolvesChildren", testSkipResolvesChildren},
		{"Fencing", testFencing},
		{"FailureFailsRunAndEnqueuesOnFailure", testFailure},
		{"RetryWaitsInTimer", testRetryWaitsInTimer},
		{"SleepCompletesOnTimer", testSleep},
		{"RescueExpiredLeases", testRescueExpired},
		{"CancelRun", testCancelRun},
		{"FairnessAcrossTenants", testFairness},
		{"FairnessAfterRetries", testFairnessAfterRetries},
		{"ClaimSaysWhetherTheTenantHasMoreQueued", testClaimTenantQueued},
		{"EventLog", testEventLog},
		{"EventOrder/CompleteBatch", testEventOrderCompleteBatch},
		{"EventOrder/TimerBatch", testEventOrderTimerBatch},
		{"EventOrder/RescueBatch", testEventOrderRescueBatch},
		{"EventOrder/Siblings", testEventOrderSiblings},
		{"ConcurrentWorkers", testConcurrentWorkers},
		{"Notifier", testNotifier},
		{"ReadRun", testReadRun},
		{"ReturnRun", testReturnRun},
		{"CancelNotifier", testCancelNotifier},
		{"RunStatus", testRunStatus},
		{"StartRuns", testStartRuns},
	}
	tests = append(tests, group("Map/", mappedTests, func(f *fixture, fn func(*fixture)) { fn(f) })...)
	tests = append(tests, group("Flow/", flowTests, func(f *fixture, fn func(*fixture)) { fn(f) })...)
	tests = append(tests, group("Key/", keyTests, func(f *fixture, fn func(*fixture)) { fn(f) })...)
	tests = append(tests, group("Continue/", continueTests, func(f *fixture, fn func(*fixture, store.Continuer)) { fn(f, f.st) })...)
	tests = append(tests, group("Workers/", workersTests, func(f *fixture, fn func(*fixture, store.Workers)) { fn(f, f.st) })...)
	tests = append(tests, group("Fleet/", fleetTests, func(f *fixture, fn func(*fixture, store.Fleet, store.Workers)) { fn(f, f.st, f.st) })...)
	tests = append(tests, group("Operator/", operatorTests, func(f *fixture, fn func(*fixture, store.Operator)) { fn(f, f.st) })...)
	tests = append(tests, group("Retry/", retrierTests, func(f *fixture, fn func(*fixture, store.Retrier)) { fn(f, f.st) })...)
	tests = append(tests, group("Deploys/", deploysTests, func(f *fixture, fn func(*fixture, store.Deploys, store.Workers)) { fn(f, f.st, f.st) })...)
	tests = append(tests, group("Child/", childTests, func(f *fixture, fn func(*fixture, store.Operator)) { fn(f, f.st) })...)
	tests = append(tests, group("Signal/", signalTests, func(f *fixture, fn func(*fixture, store.Signaler)) { fn(f, f.st) })...)
	tests = append(tests, group("FlowControl/", flowControlTests, func(f *fixture, fn func(*fixture, store.FlowControl)) { fn(f, f.st) })...)
	tests = append(tests, group("Schedule/", scheduleTests, func(f *fixture, fn func(*fixture, store.Scheduler)) { fn(f, f.st) })...)
	tests = append(tests, group("Rollback/", rollbackTests, func(f *fixture, fn func(*fixture, RollBacker)) {
		rb, ok := f.st.(RollBacker)
		require.True(f.t, ok, "the store under test is a storetest.RollBacker")
		fn(f, rb)
	})...)
	known := make(map[string]bool, len(tests))
	for _, tc := range tests {
		known[tc.name] = true
	}
	for name := range except {
		if !known[name] {
			t.Errorf("storetest: no case %q to leave out", name)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := except[tc.name]; ok {
				t.Skip(why)
			}
			t.Parallel()
			c := &clock{now: epoch}
			tc.fn(&fixture{t: t, ctx: context.Background(), st: newStore(t, c.Now), clock: c})
		})
	}
}

// group names the tests of one part of a store with prefix and binds each
// to a fixture through call, which hands the test that part of the store.
func group[F any](prefix string, tests []struct {
	name string
	fn   F
}, call func(f *fixture, fn F)) []struct {
	name string
	fn   func(f *fixture)
} {
	out := make([]struct {
		name string
		fn   func(f *fixture)
	}, len(tests))
	for i, tc := range tests {
		out[i].name, out[i].fn = prefix+tc.name, func(f *fixture) { call(f, tc.fn) }
	}
	return out
}

// ---- helpers ----

// withoutClaims checks that every claimed task has a claim token, and
// returns copies without it, to compare with what a test expects: tokens
// are random.
func withoutClaims(t *testing.T, claimed []store.ClaimedTask) []store.ClaimedTask {
	t.Helper()
	out := slices.Clone(claimed)
	for i := range out {
		require.NotZero(t, out[i].Claim, "task %s/%s has a claim token", out[i].RunID, out[i].Step)
		out[i].Claim = 0
	}
	return out
}

// claimOf returns the claim token of the task of run named step among
// claimed, or 0.
func claimOf(claimed []store.ClaimedTask, run dag.RunID, step string) int64 {
	for _, c := range claimed {
		if c.RunID == run && c.Step == step {
			return c.Claim
		}
	}
	return 0
}

func task(name string, parents ...string) store.NewTask {
	return store.NewTask{Name: name, Kind: store.KindStep, Parents: parents, MaxAttempts: 3}
}

// newRun returns a run of workflow for tenant. Tasks without a signature get
// the workflow's name as theirs, so a claim for the signature "wf" takes
// the tasks of workflow wf.
func newRun(workflow, tenant string, tasks ...store.NewTask) store.NewRun {
	for i := range tasks {
		if tasks[i].Signature == "" {
			tasks[i].Signature = workflow
		}
	}
	return store.NewRun{ID: dag.NewRunID(), Workflow: workflow, Fingerprint: "fp-" + workflow, Tenant: tenant, Input: []byte(`{"n":1}`), Tasks: tasks}
}

func (f *fixture) create(runs ...store.NewRun) {
	f.t.Helper()
	require.NoError(f.t, f.st.CreateRuns(f.ctx, runs))
}

// claim claims up to limit tasks for worker w1, of these signatures (any
// when none).
func (f *fixture) claim(limit int, signatures ...string) []store.ClaimedTask {
	f.t.Helper()
	tasks, err := f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: "w1", Signatures: signatures, Limit: limit, Lease: time.Minute})
	require.NoError(f.t, err)
	return tasks
}

func (f *fixture) claimOne() store.ClaimedTask {
	f.t.Helper()
	tasks := f.claim(1)
	require.Len(f.t, tasks, 1)
	return tasks[0]
}

func (f *fixture) complete(results ...store.TaskResult) []store.CompletionOutcome {
	f.t.Helper()
	outs, err := f.st.CompleteTasks(f.ctx, results)
	require.NoError(f.t, err)
	require.Len(f.t, outs, len(results))
	return outs
}

func done(ct store.ClaimedTask, output string) store.TaskResult {
	var out []byte
	if output != "" {
		out = []byte(output)
	}
	return store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeCompleted, Output: out}
}

func (f *fixture) tasks(id dag.RunID) map[string]store.Task {
	f.t.Helper()
	list, err := f.st.ListTasks(f.ctx, id)
	require.NoError(f.t, err)
	m := make(map[string]store.Task, len(list))
	for _, tk := range list {
		m[tk.Name] = tk
	}
	return m
}

func (f *fixture) status(id dag.RunID, name string) store.TaskStatus {
	f.t.Helper()
	return f.tasks(id)[name].Status
}

func (f *fixture) run(id dag.RunID) store.Run {
	f.t.Helper()
	r, err := f.st.GetRun(f.ctx, id)
	require.NoError(f.t, err)
	return r
}

func steps(tasks []store.ClaimedTask) []string {
	names := make([]string, len(tasks))
	for i, tk := range tasks {
		names[i] = tk.Step
	}
	sort.Strings(names)
	return names
}

// ---- tests ----

func testCreateAndRead(f *fixture) {
	t := f.t
	r := newRun("wf", "tenant-1", task("a"), task("b", "a"), task("c", "a", "b"))
	f.create(r)
	got := f.run(r.ID)
	require.Equal(t, r.ID, got.ID)
	require.Equal(t, "wf", got.Workflow)
	require.Equal(t, "fp-wf", got.Fingerprint)
	require.Equal(t, "tenant-1", got.Tenant)
	require.Equal(t, store.RunRunning, got.Status)
	require.JSONEq(t, `{"n":1}`, string(got.Input))
	require.Nil(t, got.Failure)
	require.True(t, got.CreatedAt.Equal(epoch), "created at the store clock: %v", got.CreatedAt)
	require.True(t, got.FinishedAt.IsZero())

	list, err := f.st.ListTasks(f.ctx, r.ID)
	require.NoError(t, err)
	require.Len(t, list, 3)
	require.Equal(t, []string{"a", "b", "c"}, []string{list[0].Name, list[1].Name, list[2].Name}, "creation order")
	require.Equal(t, store.TaskQueued, list[0].Status, "roots are enqueued at creation")
	require.Equal(t, store.TaskPending, list[1].Status)
	require.Equal(t, []string{"a", "b"}, list[2].Parents)
	require.Equal(t, store.KindStep, list[2].Kind)
	require.Equal(t, 0, list[0].Attempt)

	_, err = f.st.GetRun(f.ctx, dag.NewRunID())
	require.ErrorIs(t, err, store.ErrRunNotFound)
	_, err = f.st.ListTasks(f.ctx, dag.NewRunID())
	require.ErrorIs(t, err, store.ErrRunNotFound)
}

func testCreateRejectsBadRuns(f *fixture) {
	t := f.t
	existing := newRun("wf", "t", task("a"))
	f.create(existing)

	fresh := newRun("wf", "t", task("a"))
	err := f.st.CreateRuns(f.ctx, []store.NewRun{fresh, existing})
	require.ErrorIs(t, err, store.ErrRunExists)
	_, err = f.st.GetRun(f.ctx, fresh.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "all or nothing: the fresh run of a failed batch is not created")

	for name, bad := range map[string]store.NewRun{
		"unknown parent": newRun("wf", "t", task("a", "ghost")),
		"duplicate name": newRun("wf", "t", task("a"), task("a")),
		"self parent":    newRun("wf", "t", task("a", "a")),
		"cycle":          newRun("wf", "t", task("a"), task("b", "a", "c"), task("c", "b")),
		"no tasks":       newRun("wf", "t"),
		"empty name":     newRun("wf", "t", task("")),
		"onfailure with parents": newRun("wf", "t", task("a"),
			store.NewTask{Name: "@onfailure", Kind: store.KindOnFailure, Parents: []string{"a"}}),
	} {
		err := f.st.CreateRuns(f.ctx, []store.NewRun{bad})
		require.ErrorIs(t, err, store.ErrInvalidRun, name)
		_, err = f.st.GetRun(f.ctx, bad.ID)
		require.ErrorIs(t, err, store.ErrRunNotFound, name)
	}
	require.Len(t, f.claim(10), 1, "only the one valid run's root is claimable")
}

func testClaimCarriesInputAndParents(f *fixture) {
	t := f.t
	r := newRun("wf", "tenant-9", task("a"), task("b"), task("c", "b", "a"))
	f.create(r)
	roots := f.claim(10)
	require.Equal(t, []string{"a", "b"}, steps(roots))
	for _, ct := range roots {
		require.Equal(t, r.ID, ct.RunID)
		require.Equal(t, "wf", ct.Workflow)
		require.Equal(t, "tenant-9", ct.Tenant)
		require.Equal(t, store.KindStep, ct.Kind)
		require.Equal(t, 1, ct.Attempt)
		require.JSONEq(t, `{"n":1}`, string(ct.Input))
		require.Empty(t, ct.Parents)
		require.Nil(t, ct.Failure)
		require.Equal(t, store.TaskRunning, f.status(r.ID, ct.Step))
		require.Equal(t, "w1", f.tasks(r.ID)[ct.Step].Worker)
	}
	byName := map[string]store.ClaimedTask{roots[0].Step: roots[0], roots[1].Step: roots[1]}
	outs := f.complete(done(byName["a"], `"A"`), done(byName["b"], ""))
	require.Equal(t, store.OutcomeCompleted, outs[0].Outcome)
	require.Equal(t, 0, outs[0].Enqueued)
	require.Equal(t, 1, outs[1].Enqueued, "the second parent to finish enqueues the child")
	require.Equal(t, store.RunRunning, outs[1].RunStatus)

	c := f.claimOne()
	require.Equal(t, "c", c.Step)
	require.Equal(t, []store.ParentResult{
		{Step: "b", Status: store.TaskCompleted, Output: nil},
		{Step: "a", Status: store.TaskCompleted, Output: []byte(`"A"`)},
	}, c.Parents, "parents in the order the task lists them")
	outs = f.complete(done(c, `"C"`))
	require.Equal(t, store.RunCompleted, outs[0].RunStatus)
	run := f.run(r.ID)
	require.Equal(t, store.RunCompleted, run.Status)
	require.False(t, run.FinishedAt.IsZero())
	tasks := f.tasks(r.ID)
	require.Equal(t, []byte(`"C"`), tasks["c"].Output)
	require.Equal(t, store.TaskCompleted, tasks["c"].Status)
	require.Equal(t, 1, tasks["c"].Attempt)
	require.Empty(t, f.claim(10))
}

// testClaimMayLeaveOutKnownInputs checks ClaimParams.Known: a store may
// leave out the input of a run the worker holds, and says so; it sends the
// input of every other run.
func testClaimMayLeaveOutKnownInputs(f *fixture) {
	t := f.t
	known := newRun("wf", "t1", task("a"))
	known.Input = []byte(`{"known":true}`)
	other := newRun("wf", "t2", task("a"))
	f.create(known, other)
	claimed, err := f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: "w1", Limit: 10, Lease: time.Minute, Known: []dag.RunID{known.ID, dag.NewRunID()}})
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	for _, c := range claimed {
		switch {
		case c.RunID == other.ID:
			require.False(t, c.InputOmitted, "the worker does not hold this run's input")
			require.JSONEq(t, `{"n":1}`, string(c.Input))
		case c.InputOmitted:
			require.Nil(t, c.Input, "left out")
		default:
			require.JSONEq(t, `{"known":true}`, string(c.Input), "sent all the same")
		}
	}
}

func testClaimLimitAndWorkflowFilter(f *fixture) {
	t := f.t
	for range 5 {
		f.create(newRun("left", "t", task("x")), newRun("right", "t", task("y")))
	}
	require.Empty(t, f.claim(0), "limit 0 claims nothing")
	got := f.claim(3, "left")
	require.Len(t, got, 3)
	for _, ct := range got {
		require.Equal(t, "left", ct.Workflow)
	}
	require.Len(t, f.claim(100, "left", "nothing"), 2)
	require.Len(t, f.claim(100, "unknown"), 0)
	require.Len(t, f.claim(100), 5, "no workflow filter claims any workflow")
}

// testClaimWeighsExtraSlots checks ClaimParams.Extra: a task of a signature
// with extra slots takes them beyond its own, and a claim takes, in queue
// order, the tasks whose slots fit in Limit, always at least one; tasks of
// other signatures take one slot each.
func testClaimWeighsExtraSlots(f *fixture) {
	t := f.t
	var ids []dag.RunID // in queue order
	for i := range 8 {
		// Even runs are fan-outs (a root and three children), odd ones a
		// single step of another signature.
		r := newRun("single", "t", task("a"))
		if i%2 == 0 {
			r = newRun("fan", "t", task("a"), task("b1", "a"), task("b2", "a"), task("b3", "a"))
		}
		f.create(r)
		ids = append(ids, r.ID)
	}
	extra := map[string]int{"fan": 2} // the root's three children, less the one its own slot takes
	claim := func(limit int) []dag.RunID {
		t.Helper()
		claimed, err := f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: "w1", Limit: limit, Lease: time.Minute, Extra: extra})
		require.NoError(t, err)
		var got []dag.RunID
		for _, c := range claimed {
			require.Equal(t, "a", c.Step)
			got = append(got, c.RunID)
		}
		return got
	}
	require.Equal(t, ids[0:2], claim(6), "a root (3 slots) and a single (1): the next root would make 7 of 6")
	require.Equal(t, ids[2:3], claim(2), "a root alone takes more than the limit, and is claimed: at least one")
	require.Equal(t, ids[3:6], claim(5), "a single, a root and a single: 5 of 5")
	require.Equal(t, ids[6:8], claim(10), "a root and a single")
	require.Empty(t, claim(10))
}

func testFanInEnqueuesOnce(f *fixture) {
	t := f.t
	const width = 16
	tasks := []store.NewTask{task("root")}
	var mids []string
	for i := range width {
		name := fmt.Sprintf("m%02d", i)
		mids = append(mids, name)
		tasks = append(tasks, task(name, "root"))
	}
	tasks = append(tasks, task("join", mids...))
	r := newRun("fan", "t", tasks...)
	f.create(r)
	root := f.claimOne()
	require.Equal(t, width, f.complete(done(root, `1`))[0].Enqueued)
	claimed := f.claim(100)
	require.Equal(t, mids, steps(claimed))
	rand.Shuffle(len(claimed), func(i, j int) { claimed[i], claimed[j] = claimed[j], claimed[i] })
	enqueued := 0
	for i, ct := range claimed {
		out := f.complete(done(ct, fmt.Sprintf("%d", i)))[0]
		enqueued += out.Enqueued
		if i < len(claimed)-1 {
			require.Equal(t, store.TaskPending, f.status(r.ID, "join"))
		}
	}
	require.Equal(t, 1, enqueued, "the join is enqueued exactly once")
	join := f.claimOne()
	require.Equal(t, "join", join.Step)
	require.Len(t, join.Parents, width)
	require.Empty(t, f.claim(10))
}

func testSkipResolvesChildren(f *fixture) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b", "a"))
	f.create(r)
	a := f.claimOne()
	outs := f.complete(store.TaskResult{RunID: a.RunID, Step: "a", Attempt: 1, Claim: a.Claim, Outcome: store.OutcomeSkipped, Reason: "skip=p"})
	require.Equal(t, store.OutcomeSkipped, outs[0].Outcome)
	require.Equal(t, 1, outs[0].Enqueued)
	tk := f.tasks(r.ID)["a"]
	require.Equal(t, store.TaskSkipped, tk.Status)
	require.Equal(t, "skip=p", tk.Reason)
	b := f.claimOne()
	require.Equal(t, []store.ParentResult{{Step: "a", Status: store.TaskSkipped}}, b.Parents)
	outs = f.complete(store.TaskResult{RunID: b.RunID, Step: "b", Attempt: 1, Claim: b.Claim, Outcome: store.OutcomeSkipped, Reason: "parent a skipped"})
	require.Equal(t, store.RunCompleted, outs[0].RunStatus, "a run of skipped tasks completes")
}

func testFencing(f *fixture) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b", "a"))
	f.create(r)
	a := f.claimOne()
	stale := store.CompletionOutcome{Outcome: store.OutcomeStale, RunStatus: store.RunRunning}
	wrong := done(a, `"x"`)
	wrong.Attempt = 2
	require.Equal(t, stale, f.complete(wrong)[0], "a result for another attempt is stale")
	notRunning := done(a, `"x"`)
	notRunning.Step = "b"
	require.Equal(t, stale, f.complete(notRunning)[0], "a result for a task that is not running is stale")
	unknown := done(a, `"x"`)
	unknown.RunID = dag.NewRunID()
	require.Equal(t, store.OutcomeStale, f.complete(unknown)[0].Outcome)
	noStep := done(a, `"x"`)
	noStep.Step = "ghost"
	require.Equal(t, store.OutcomeStale, f.complete(noStep)[0].Outcome)

	outs := f.complete(done(a, `"first"`), done(a, `"second"`))
	require.Equal(t, store.OutcomeCompleted, outs[0].Outcome)
	require.Equal(t, store.OutcomeStale, outs[1].Outcome, "the same attempt cannot complete twice, even in one batch")
	require.Equal(t, []byte(`"first"`), f.tasks(r.ID)["a"].Output)
	require.Len(t, f.claim(10), 1, "the child was enqueued once")
}

func testFailure(f *fixture) {
	t := f.t
	onFailure := store.NewTask{Name: "@onfailure", Kind: store.KindOnFailure, MaxAttempts: 1}
	r := newRun("wf", "t", task("a"), task("b"), task("c", "a"), task("d", "b"), onFailure)
	f.create(r)
	roots := f.claim(10)
	require.Equal(t, []string{"a", "b"}, steps(roots), "the onfailure task is not enqueued at creation")
	a, b := roots[0], roots[1]
	if a.Step != "a" {
		a, b = b, a
	}
	outs := f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: a.Attempt, Claim: a.Claim, Outcome: store.OutcomeFailed, Error: "card declined"})
	require.Equal(t, store.OutcomeFailed, outs[0].Outcome)
	require.Equal(t, store.RunFailed, outs[0].RunStatus)
	require.Equal(t, 1, outs[0].Enqueued, "the onfailure task is enqueued")

	run := f.run(r.ID)
	require.Equal(t, store.RunFailed, run.Status)
	require.Equal(t, &dag.Failure{RunID: r.ID, Step: "a", Attempt: 1, Message: "card declined"}, run.Failure)
	tasks := f.tasks(r.ID)
	require.Equal(t, store.TaskFailed, tasks["a"].Status)
	require.Equal(t, "card declined", tasks["a"].Error)
	require.Equal(t, store.TaskCancelled, tasks["c"].Status, "nothing new is scheduled")
	require.Equal(t, store.TaskRunning, tasks["b"].Status, "running tasks are left to finish")

	of := f.claimOne()
	require.Equal(t, "@onfailure", of.Step)
	require.Equal(t, store.KindOnFailure, of.Kind)
	require.Equal(t, run.Failure, of.Failure)
	require.JSONEq(t, `{"n":1}`, string(of.Input))

	outs = f.complete(done(b, `"late"`))
	require.Equal(t, store.OutcomeCompleted, outs[0].Outcome, "a running task of a failed run still finishes")
	require.Equal(t, 0, outs[0].Enqueued, "but enqueues nothing")
	require.Equal(t, store.RunFailed, outs[0].RunStatus)
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "d"))

	outs = f.complete(done(of, ""))
	require.Equal(t, store.OutcomeCompleted, outs[0].Outcome)
	require.Equal(t, store.RunFailed, f.run(r.ID).Status)
	require.Empty(t, f.claim(10))
}

func testRetryWaitsInTimer(f *fixture) {
	t := f.t
	r := newRun("wf", "t", task("a"))
	f.create(r)
	a := f.claimOne()
	_, pending, err := f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.False(t, pending)

	outs := f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: 1, Claim: a.Claim, Outcome: store.OutcomeRetry, Error: "flaky", Delay: 10 * time.Second})
	require.Equal(t, store.OutcomeRetry, outs[0].Outcome)
	tk := f.tasks(r.ID)["a"]
	require.Equal(t, store.TaskBackoff, tk.Status)
	require.Equal(t, "flaky", tk.Error)
	require.True(t, tk.WakeAt.Equal(epoch.Add(10*time.Second)), "wake at %v", tk.WakeAt)
	next, pending, err := f.st.NextTimer(f.ctx)
	require.NoError(t, err)
	require.True(t, pending)
	require.True(t, next.Equal(epoch.Add(10*time.Second)))

	require.Empty(t, f.claim(10), "a task in backoff is not claimable")
	f.clock.advance(9 * time.Second)
	fired, err := f.st.FireTimers(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 0, fired, "not due yet")
	f.clock.advance(time.Second)
	fired, err = f.st.FireTimers(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, fired)
	fired, err = f.st.FireTimers(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 0, fired, "a timer fires once")
	require.Equal(t, store.TaskQueued, f.status(r.ID, "a"))
	again := f.claimOne()
	require.Equal(t, 2, again.Attempt)
	require.Equal(t, store.OutcomeStale, f.complete(done(a, `"old"`))[0].Outcome, "attempt 1 is fenced off")
	require.Equal(t, store.RunCompleted, f.complete(done(again, `"new"`))[0].RunStatus)
}

func testSleep(f *fixture) {
	t := f.t
	r := newRun("wf", "t", store.NewTask{Name: "nap", Kind: store.KindSleep, MaxAttempts: 1}, task("after", "nap"))
	r2 := newRun("wf", "t", store.NewTask{Name: "nap", Kind: store.KindSleep, MaxAttempts: 1})
	f.create(r, r2)
	naps := f.claim(10)
	require.Len(t, naps, 2)
	require.Equal(t, store.KindSleep, naps[0].Kind)
	results := make([]store.TaskResult, 2)
	for i, n := range naps {
		results[i] = store.TaskResult{RunID: n.RunID, Step: "nap", Attempt: 1, Claim: n.Claim, Outcome: store.OutcomeSleep, Delay: 24 * time.Hour}
		if n.RunID == r2.ID {
			results[i].Delay = 0
			results[i].WakeAt = epoch.Add(time.Hour)
		}
	}
	f.complete(results...)
	require.Equal(t, store.TaskSleeping, f.status(r.ID, "nap"))
	require.True(t, f.tasks(r.ID)["nap"].WakeAt.Equal(epoch.Add(24*time.Hour)))
	require.True(t, f.tasks(r2.ID)["nap"].WakeAt.Equal(epoch.Add(time.Hour)), "an absolute wake time is kept as is")

	f.clock.advance(time.Hour)
	fired, err := f.st.FireTimers(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, fired)
	require.Equal(t, store.RunCompleted, f.run(r2.ID).Status)
	require.Empty(t, f.claim(10))

	f.clock.advance(23 * time.Hour)
	fired, err = f.st.FireTimers(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, fired)
	require.Equal(t, store.TaskCompleted, f.status(r.ID, "nap"))
	after := f.claimOne()
	require.Equal(t, "after", after.Step)
	require.Equal(t, []store.ParentResult{{Step: "nap", Status: store.TaskCompleted}}, after.Parents)
}

func testRescueExpired(f *fixture) {
	t := f.t
	retryable := newRun("wf", "t", task("a"))
	last := newRun("wf", "t", store.NewTask{Name: "a", Kind: store.KindStep, MaxAttempts: 1})
	f.create(retryable, last)
	claimed := f.claim(10)
	require.Len(t, claimed, 2)
	n, err := f.st.RescueExpired(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 0, n, "leases still held")

	f.clock.advance(time.Minute + time.Second)
	n, err = f.st.RescueExpired(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, store.TaskQueued, f.status(retryable.ID, "a"))
	require.Equal(t, store.TaskFailed, f.status(last.ID, "a"), "no attempts left: failed")
	lastRun := f.run(last.ID)
	require.Equal(t, store.RunFailed, lastRun.Status)
	require.Equal(t, "lease expired", lastRun.Failure.Message)

	again := f.claimOne()
	require.Equal(t, retryable.ID, again.RunID)
	require.Equal(t, 2, again.Attempt)
	f.complete(done(again, `1`))

	// A task whose lease ends after its run failed is cancelled, not rescued:
	// a failed run schedules nothing new.
	failing := newRun("wf", "t", task("bad"), task("slow"))
	f.create(failing)
	pair := f.claim(2)
	require.Len(t, pair, 2)
	for _, ct := range pair {
		if ct.Step == "bad" {
			f.complete(store.TaskResult{RunID: ct.RunID, Step: "bad", Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeFailed, Error: "x"})
		}
	}
	f.clock.advance(2 * time.Minute)
	_, err = f.st.RescueExpired(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, store.TaskCancelled, f.status(failing.ID, "slow"))
	require.Empty(t, f.claim(10))
	for _, ct := range claimed {
		require.Equal(t, store.OutcomeStale, f.complete(done(ct, `"late"`))[0].Outcome, "the expired attempt is fenced off")
	}
}

func testCancelRun(f *fixture) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b"), task("c", "a"), store.NewTask{Name: "nap", Kind: store.KindSleep, MaxAttempts: 1})
	other := newRun("wf", "t", task("a"))
	f.create(r, other)
	claimed := f.claim(2)
	var inFlight store.ClaimedTask
	for _, ct := range claimed {
		if ct.RunID == r.ID {
			inFlight = ct
		}
	}
	require.Equal(t, r.ID, inFlight.RunID)
	ok, err := f.st.CancelRun(f.ctx, r.ID)
	require.NoError(t, err)
	require.True(t, ok)
	run := f.run(r.ID)
	require.Equal(t, store.RunCancelled, run.Status)
	require.False(t, run.FinishedAt.IsZero())
	for name, tk := range f.tasks(r.ID) {
		require.Equal(t, store.TaskCancelled, tk.Status, name)
	}
	require.Equal(t, store.OutcomeStale, f.complete(done(inFlight, `"x"`))[0].Outcome)
	for _, ct := range f.claim(10) {
		require.Equal(t, other.ID, ct.RunID, "the cancelled run's queue entries are gone")
	}
	ok, err = f.st.CancelRun(f.ctx, r.ID)
	require.NoError(t, err)
	require.False(t, ok)
	_, err = f.st.CancelRun(f.ctx, dag.NewRunID())
	require.ErrorIs(t, err, store.ErrRunNotFound)
}

func testFairness(f *fixture) {
	t := f.t
	const bulk = 10_000
	runs := make([]store.NewRun, bulk)
	for i := range runs {
		runs[i] = newRun("wf", "B", task("a"))
	}
	f.create(runs...)
	a := newRun("wf", "A", task("a"))
	f.create(a)
	first := f.claim(2)
	require.Len(t, first, 2)
	require.True(t, first[0].RunID == a.ID || first[1].RunID == a.ID,
		"A's one task is among the first 2 claimed behind B's %d", bulk)

	// Interleaving holds for many tenants: one task each per round.
	for _, tenant := range []string{"C", "D", "E"} {
		f.create(newRun("wf", tenant, task("a")), newRun("wf", tenant, task("a")))
	}
	next := f.claim(4)
	tenants := map[string]int{}
	for _, ct := range next {
		tenants[ct.Tenant]++
	}
	require.Equal(t, map[string]int{"B": 1, "C": 1, "D": 1, "E": 1}, tenants)
}

func testClaimTenantQueued(f *fixture) {
	t := f.t
	f.backlog("B", 3, 0)
	a := newRun("wf", "A", task("a"))
	f.create(a)
	queued := func(claimed []store.ClaimedTask) string {
		var b strings.Builder
		for _, c := range claimed {
			fmt.Fprintf(&b, "%s:%v ", c.Tenant, c.TenantQueued)
		}
		return b.String()
	}
	// B has tasks behind each of its first two; A's one has none. In one
	// claim, a tenant's earlier task has its later one behind it.
	require.Equal(t, "B:true A:false ", queued(f.claim(2)))
	require.Equal(t, "B:true B:false ", queued(f.claim(5)))
	// Claimed one at a time, the same answers.
	f.backlog("C", 2, 0)
	require.Equal(t, "C:true C:false ", queued(f.claimEach(2)))
	require.Empty(t, f.claim(1))
}

func testFairnessAfterRetries(f *fixture) {
	t := f.t
	const bulk = 2_000
	runs := make([]store.NewRun, bulk)
	for i := range runs {
		runs[i] = newRun("wf", "B", task("a"))
	}
	f.create(runs...)
	// Every B task fails once and waits out a retry delay.
	for {
		batch := f.claim(500)
		if len(batch) == 0 {
			break
		}
		results := make([]store.TaskResult, len(batch))
		for i, ct := range batch {
			results[i] = store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeRetry, Error: "x", Delay: time.Second}
		}
		f.complete(results...)
	}
	f.clock.advance(time.Second)
	total := 0
	for {
		n, err := f.st.FireTimers(f.ctx, 500)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		total += n
	}
	require.Equal(t, bulk, total)
	a := newRun("wf", "A", task("a"))
	f.create(a)
	first := f.claim(2)
	require.Len(t, first, 2)
	require.True(t, first[0].RunID == a.ID || first[1].RunID == a.ID,
		"A is served first even behind B's woken retries")
	for _, ct := range first {
		if ct.RunID != a.ID {
			require.Equal(t, 2, ct.Attempt)
		}
	}
}

func testEventLog(f *fixture) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b", "a"))
	f.create(r)
	a := f.claimOne()
	f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: 1, Claim: a.Claim, Outcome: store.OutcomeRetry, Error: "e1", Delay: time.Second})
	f.clock.advance(time.Second)
	_, err := f.st.FireTimers(f.ctx, 10)
	require.NoError(t, err)
	a = f.claimOne()
	f.complete(done(a, `1`))
	b := f.claimOne()
	f.complete(store.TaskResult{RunID: r.ID, Step: "b", Attempt: b.Attempt, Claim: b.Claim, Outcome: store.OutcomeSkipped, Reason: "skip=p"})
	type ev struct {
		Step    string
		Type    store.EventType
		Attempt int
		Detail  string
	}
	log := func(id dag.RunID) []ev {
		t.Helper()
		events, err := f.st.ListEvents(f.ctx, id)
		require.NoError(t, err)
		var got []ev
		for i, e := range events {
			got = append(got, ev{e.Step, e.Type, e.Attempt, e.Detail})
			require.False(t, e.At.Before(epoch))
			if i > 0 {
				require.False(t, e.At.Before(events[i-1].At), "oldest first: %v before %v", events[i-1], e)
			}
		}
		return got
	}
	got := log(r.ID)
	require.Equal(t, []ev{
		{"a", store.EventQueued, 0, ""},
		{"a", store.EventStarted, 1, ""},
		{"a", store.EventRetrying, 1, "e1"},
		{"a", store.EventQueued, 1, ""},
		{"a", store.EventStarted, 2, ""},
		{"a", store.EventCompleted, 2, ""},
		{"b", store.EventQueued, 0, ""},
		{"b", store.EventStarted, 1, ""},
		{"b", store.EventSkipped, 1, "skip=p"},
	}, got)

	// A rescued attempt, a retried one and a completed one, each a round.
	r2 := newRun("wf", "t", store.NewTask{Name: "c", Kind: store.KindStep, MaxAttempts: 3})
	f.create(r2)
	f.clock.advance(time.Second)
	f.claimOne()
	f.clock.advance(2 * time.Minute) // past the lease
	n, err := f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	f.clock.advance(time.Second)
	c := f.claimOne()
	f.complete(store.TaskResult{RunID: r2.ID, Step: "c", Attempt: c.Attempt, Claim: c.Claim, Outcome: store.OutcomeRetry, Error: "e2", Delay: time.Second})
	f.clock.advance(time.Second)
	_, err = f.st.FireTimers(f.ctx, 10)
	require.NoError(t, err)
	c = f.claimOne()
	f.complete(done(c, `3`))
	require.Equal(t, []ev{
		{"c", store.EventQueued, 0, ""},
		{"c", store.EventStarted, 1, ""},
		{"c", store.EventRescued, 1, "lease expired"},
		{"c", store.EventQueued, 1, ""},
		{"c", store.EventStarted, 2, ""},
		{"c", store.EventRetrying, 2, "e2"},
		{"c", store.EventQueued, 2, ""},
		{"c", store.EventStarted, 3, ""},
		{"c", store.EventCompleted, 3, ""},
	}, log(r2.ID))
}

func testConcurrentWorkers(f *fixture) {
	t := f.t
	const (
		runs    = 40
		width   = 8
		workers = 6
	)
	tasks := []store.NewTask{task("root")}
	var mids []string
	for i := range width {
		mids = append(mids, fmt.Sprintf("m%d", i))
		tasks = append(tasks, task(mids[i], "root"))
	}
	tasks = append(tasks, task("join", mids...))
	batch := make([]store.NewRun, runs)
	for i := range batch {
		batch[i] = newRun("fan", fmt.Sprintf("tenant-%d", i%3), tasks...)
	}
	f.create(batch...)

	var mu sync.Mutex
	claims := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle := 0
			for idle < 50 {
				got, err := f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: fmt.Sprintf("w%d", w), Limit: 4, Lease: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					idle++
					time.Sleep(time.Millisecond)
					continue
				}
				idle = 0
				results := make([]store.TaskResult, len(got))
				mu.Lock()
				for i, ct := range got {
					claims[ct.RunID.String()+"/"+ct.Step]++
					results[i] = done(ct, `0`)
				}
				mu.Unlock()
				outs, err := f.st.CompleteTasks(f.ctx, results)
				if err != nil {
					errs <- err
					return
				}
				for _, o := range outs {
					if o.Outcome != store.OutcomeCompleted {
						errs <- fmt.Errorf("outcome %s", o.Outcome)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, claims, runs*(width+2), "every task claimed")
	for k, n := range claims {
		require.Equal(t, 1, n, "task %s claimed %d times", k, n)
	}
	for _, r := range batch {
		require.Equal(t, store.RunCompleted, f.run(r.ID).Status)
	}
}
