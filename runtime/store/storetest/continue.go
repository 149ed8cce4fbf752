package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// continueTests check store.Continuer.
var continueTests = []struct {
	name string
	fn   func(*fixture, store.Continuer)
}{
	{"Chain", testContinueChain},
	{"SignaturesKnownAndLimit", testContinueFilters},
	{"FanIn", testContinueFanIn},
	{"NotForARunThatFails", testContinueNotForFailedRun},
	{"Fairness", testContinueFairness},
	{"AdmittedRuns", testContinueAdmitted},
	{"CarriesTraceParent", testClaimCarriesTraceParent},
}

// stepEvent is an event of a run's log by step, type and attempt.
type stepEvent struct {
	Step    string
	Type    store.EventType
	Attempt int
}

// stepEvents returns the events of run id's log, oldest first.
func (f *fixture) stepEvents(id dag.RunID) []stepEvent {
	f.t.Helper()
	events, err := f.st.ListEvents(f.ctx, id)
	require.NoError(f.t, err)
	var out []stepEvent
	for _, e := range events {
		out = append(out, stepEvent{e.Step, e.Type, e.Attempt})
	}
	return out
}

// continueAs stores results for worker w1 and claims up to limit of the
// steps they made ready, of the signatures given (any when none).
func (f *fixture) continueAs(c store.Continuer, limit int, known []dag.RunID, signatures []string, results ...store.TaskResult) ([]store.CompletionOutcome, []store.ClaimedTask) {
	f.t.Helper()
	outs, next, err := c.CompleteAndContinue(f.ctx, results, store.ClaimParams{
		Worker: "w1", Signatures: signatures, Limit: limit, Lease: time.Minute, Known: known,
	})
	require.NoError(f.t, err)
	require.Len(f.t, outs, len(results))
	return outs, next
}

// testContinueChain: a chain's next step is claimed in the call that
// stores its parent's result, as a claim from the queue would claim it (the
// same task, events and lease), and never enters the queue; with limit 0
// the call is CompleteTasks.
func testContinueChain(f *fixture, c store.Continuer) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b", "a"), task("c", "b"))
	f.create(r)
	a := f.claimOne()
	outs, next := f.continueAs(c, 1, nil, []string{"wf"}, done(a, `1`))
	require.Equal(t, store.OutcomeCompleted, outs[0].Outcome)
	require.Equal(t, store.RunRunning, outs[0].RunStatus)
	require.Equal(t, 1, outs[0].Enqueued, "the step it made ready counts, started or queued")
	require.Equal(t, []store.ClaimedTask{{
		RunID: r.ID, Workflow: "wf", Tenant: "t", Step: "b", Kind: store.KindStep, Attempt: 1, Signature: "wf",
		Input: r.Input, Parents: []store.ParentResult{{Step: "a", Status: store.TaskCompleted, Output: []byte(`1`)}},
	}}, withoutClaims(t, next))
	b := f.tasks(r.ID)["b"]
	require.Equal(t, store.TaskRunning, b.Status)
	require.Equal(t, 1, b.Attempt)
	require.Empty(t, f.claim(10), "started, not queued")

	// Limit 0 stores the result and queues the next step.
	outs, next = f.continueAs(c, 0, nil, []string{"wf"}, done(next[0], `2`))
	require.Empty(t, next)
	require.Equal(t, 1, outs[0].Enqueued)
	cc := f.claimOne()
	require.Equal(t, "c", cc.Step)
	require.Equal(t, []store.ParentResult{{Step: "b", Status: store.TaskCompleted, Output: []byte(`2`)}}, cc.Parents)
	outs, next = f.continueAs(c, 5, nil, []string{"wf"}, done(cc, `3`))
	require.Empty(t, next, "nothing left to start")
	require.Equal(t, store.RunCompleted, outs[0].RunStatus)

	require.Equal(t, []stepEvent{
		{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}, {"a", store.EventCompleted, 1},
		{"b", store.EventQueued, 0}, {"b", store.EventStarted, 1}, {"b", store.EventCompleted, 1},
		{"c", store.EventQueued, 0}, {"c", store.EventStarted, 1}, {"c", store.EventCompleted, 1},
	}, f.stepEvents(r.ID), "the events of steps claimed from the queue")

	// A started step holds a lease: once it ends, the task is rescued.
	r2 := newRun("wf", "t", task("a"), task("b", "a"))
	f.create(r2)
	_, next = f.continueAs(c, 1, nil, nil, done(f.claimOne(), `1`))
	require.Len(t, next, 1)
	n, err := f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 0, n, "lease still held")
	f.clock.advance(time.Minute + time.Second)
	n, err = f.st.RescueExpired(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	again := f.claimOne()
	require.Equal(t, "b", again.Step)
	require.Equal(t, 2, again.Attempt)
	require.Equal(t, store.OutcomeStale, f.complete(done(next[0], `late`))[0].Outcome, "the first attempt is fenced off")
}

// testContinueFilters: only steps of the signatures the worker serves are
// started, at most limit of them; the rest are queued; a known run's input
// may be left out.
func testContinueFilters(f *fixture, c store.Continuer) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b1", "a"), task("b2", "a"), task("b3", "a"),
		store.NewTask{Name: "x", Kind: store.KindStep, Parents: []string{"a"}, MaxAttempts: 1, Signature: "other"})
	f.create(r)
	a := f.claimOne()
	outs, next := f.continueAs(c, 2, []dag.RunID{r.ID}, []string{"wf"}, done(a, `1`))
	require.Equal(t, 4, outs[0].Enqueued)
	require.Len(t, next, 2, "up to the limit")
	for _, ct := range next {
		if ct.InputOmitted { // a store may leave a known run's input out
			require.Nil(t, ct.Input)
		} else {
			require.Equal(t, r.Input, ct.Input)
		}
		require.Equal(t, "wf", ct.Signature)
	}
	rest := f.claim(10)
	require.Len(t, rest, 2)
	started := map[string]bool{}
	for _, ct := range next {
		started[ct.Step] = true
	}
	for _, ct := range rest {
		require.False(t, started[ct.Step], "%s started and queued", ct.Step)
		started[ct.Step] = true
	}
	require.Equal(t, map[string]bool{"b1": true, "b2": true, "b3": true, "x": true}, started, "another signature's step is queued")
}

// testContinueFanIn: the result that resolves a child's last parent
// starts it, with every parent's output, also when both parents' results
// come in one call.
func testContinueFanIn(f *fixture, c store.Continuer) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b"), task("c", "b", "a"))
	f.create(r)
	roots := f.claim(2)
	require.Len(t, roots, 2)
	var results []store.TaskResult
	for _, ct := range roots {
		results = append(results, done(ct, `"`+ct.Step+`"`))
	}
	outs, next := f.continueAs(c, 2, nil, nil, results...)
	require.Equal(t, 1, outs[0].Enqueued+outs[1].Enqueued, "made ready once")
	require.Len(t, next, 1)
	require.Equal(t, "c", next[0].Step)
	require.Equal(t, []store.ParentResult{
		{Step: "b", Status: store.TaskCompleted, Output: []byte(`"b"`)},
		{Step: "a", Status: store.TaskCompleted, Output: []byte(`"a"`)},
	}, next[0].Parents, "in the task's parent order")
	require.Equal(t, store.RunCompleted, f.complete(done(next[0], ``))[0].RunStatus)
}

// testContinueNotForFailedRun: a step made ready in a call that also
// fails its run is cancelled, not started.
func testContinueNotForFailedRun(f *fixture, c store.Continuer) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("s"), task("b", "a"))
	f.create(r)
	roots := f.claim(2)
	require.Len(t, roots, 2)
	var results []store.TaskResult
	for _, ct := range roots {
		if ct.Step == "a" {
			results = append([]store.TaskResult{done(ct, `1`)}, results...)
		} else {
			results = append(results, store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeFailed, Error: "no"})
		}
	}
	outs, next := f.continueAs(c, 5, nil, nil, results...)
	require.Empty(t, next)
	require.Equal(t, store.RunFailed, outs[1].RunStatus)
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "b"))
	require.Empty(t, f.claim(10))
}

// testContinueFairness: a tenant with a backlog continues its runs only
// while no other tenant has work queued; one without a backlog always
// may; a step that may not go waits in the queue behind the other
// tenant's work.
func testContinueFairness(f *fixture, c store.Continuer) {
	t := f.t
	x1 := newRun("wf", "busy", task("a"), task("b", "a"))
	x2 := newRun("wf", "busy", task("a"), task("b", "a"))
	f.create(x1, x2)
	heads := f.claim(2)
	require.Len(t, heads, 2)
	require.Equal(t, []dag.RunID{x1.ID, x2.ID}, []dag.RunID{heads[0].RunID, heads[1].RunID})
	var backlog []store.NewRun
	for range 3 {
		backlog = append(backlog, newRun("wf", "busy", task("q")))
	}
	f.create(backlog...)

	// busy alone has work queued: its run goes on.
	_, next := f.continueAs(c, 1, nil, nil, done(heads[0], `1`))
	require.Len(t, next, 1, "no other tenant waits")
	require.Equal(t, x1.ID, next[0].RunID)
	f.complete(done(next[0], `2`))

	// idle queues a task: busy's next step queues behind its backlog.
	i := newRun("wf", "idle", task("i"))
	f.create(i)
	_, next = f.continueAs(c, 1, nil, nil, done(heads[1], `1`))
	require.Empty(t, next, "another tenant waits")
	require.Equal(t, store.TaskQueued, f.status(x2.ID, "b"))
	first := f.claimOne()
	require.Equal(t, i.ID, first.RunID, "the other tenant's task comes first")
	f.complete(done(first, ``))

	// idle, with nothing queued past the head block, goes on while busy
	// has a backlog.
	j := newRun("wf", "idle", task("a"), task("b", "a"))
	f.create(j)
	var ja store.ClaimedTask
	for _, ct := range f.claim(2) {
		if ct.RunID == j.ID {
			ja = ct
		} else {
			require.Equal(t, backlog[0].ID, ct.RunID)
			f.complete(done(ct, ``))
		}
	}
	require.Equal(t, "a", ja.Step, "j's root was claimed with busy's next")
	_, next = f.continueAs(c, 1, nil, nil, done(ja, `1`))
	require.Len(t, next, 1, "a tenant without a backlog goes on")
	require.Equal(t, j.ID, next[0].RunID)
	f.complete(done(next[0], ``))

	var order []dag.RunID
	for _, ct := range f.claim(10) {
		order = append(order, ct.RunID)
		f.complete(done(ct, ``))
	}
	require.Equal(t, []dag.RunID{backlog[1].ID, backlog[2].ID, x2.ID}, order, "x2's step behind busy's backlog")
}

// testContinueAdmitted: the room a capped run gives back admits the next
// run of its key, whose root the same call claims for the worker, after
// the children the results made ready; not when another tenant waits in
// the queue, nor a step that takes a rate limit's tokens, nor past the
// limit.
func testContinueAdmitted(f *fixture, c store.Continuer) {
	t := f.t
	chain := newRun("wf", "t", task("a"), task("b", "a"))
	chain.Concurrency, chain.ConcurrencyKey = 1, "k2"
	r1, r2, r3 := capped("k", 1), capped("k", 1), capped("k", 1)
	f.create(chain)
	for _, r := range []store.NewRun{r1, r2, r3} {
		f.create(r) // one call each: r1's id is the lowest
	}
	heads := f.claim(10)
	require.Len(t, heads, 2, "the roots of chain and r1")
	outs, next := f.continueAs(c, 5, nil, nil, done(heads[0], `1`), done(heads[1], `2`))
	require.Equal(t, store.RunCompleted, outs[1].RunStatus)
	require.Equal(t, 1, outs[0].Enqueued, "chain's b")
	require.Equal(t, 0, outs[1].Enqueued, "an admitted run's root is no result's")
	var got []string
	for _, ct := range next {
		require.Equal(t, 1, ct.Attempt)
		got = append(got, ct.Step+"@"+ct.RunID.String())
	}
	require.Equal(t, []string{"b@" + chain.ID.String(), "a@" + r2.ID.String()}, got, "the child first, then the admitted run's root")
	require.Equal(t, r2.Input, next[1].Input)
	require.Equal(t, []store.RunStatus{store.RunCompleted, running, queued}, f.statuses(r1, r2, r3))
	require.Equal(t, store.TaskRunning, f.status(r2.ID, "a"))
	require.Empty(t, f.claim(10), "started, not queued")
	require.Equal(t, []stepEvent{{"a", store.EventQueued, 0}, {"a", store.EventStarted, 1}}, f.stepEvents(r2.ID), "as if claimed from the queue")

	// Limit 1: the admitted root past it is queued.
	f.complete(done(next[0], `3`))
	outs, next = f.continueAs(c, 0, nil, nil, done(next[1], `4`))
	require.Empty(t, next)
	require.Equal(t, store.TaskQueued, f.status(r3.ID, "a"), "limit 0 queues the admitted root")
	r3a := f.claimOne()
	require.Equal(t, r3.ID, r3a.RunID)

	// Another tenant's task waits in the queue, and t has a backlog there:
	// the admitted root queues behind it.
	r4 := capped("k", 1)
	f.create(r4)
	var backlog []store.NewRun
	for range 3 {
		backlog = append(backlog, newRun("wf", "t", task("q")))
	}
	f.create(backlog...)
	f.create(newRun("wf", "other", task("o")))
	_, next = f.continueAs(c, 5, nil, nil, done(r3a, ``))
	require.Empty(t, next, "another tenant waits")
	require.Equal(t, store.TaskQueued, f.status(r4.ID, "a"))
	for ct := f.claim(10); len(ct) > 0; ct = f.claim(10) {
		for _, x := range ct {
			f.complete(done(x, ``))
		}
	}
	require.Equal(t, store.RunCompleted, f.run(r4.ID).Status)
}

// testContinueAdmittedRated: an admitted run's step that takes a rate
// limit's tokens is parked for its bucket, never started by the call.
func testContinueAdmittedRated(f *fixture, fc store.FlowControl) {
	t := f.t
	require.NoError(t, fc.PutRateLimits(f.ctx, []store.RateLimit{{Name: "stripe", Rate: 1000, Burst: 1000}}))
	r1 := capped("k", 1)
	r2 := rated("t", "stripe", "", 1)
	r2.Concurrency, r2.ConcurrencyKey = 1, "k"
	f.create(r1)
	f.create(r2)
	_, next := f.continueAs(f.st, 5, nil, nil, done(f.claimOne(), ``))
	require.Empty(t, next, "a rated step waits for its bucket's admission")
	require.Equal(t, running, f.run(r2.ID).Status)
	f.admit()
	require.Equal(t, r2.ID, f.claimOne().RunID)
}
