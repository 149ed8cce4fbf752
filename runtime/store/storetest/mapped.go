package storetest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// The tests of mapped tasks (store.KindMap, store.KindElement).
var mappedTests = []struct {
	name string
	fn   func(f *fixture)
}{
	{"ElementsRunAndCollectInOrder", testMapCollects},
	{"LimitBoundsElementsInFlight", testMapLimit},
	{"ElementFailureFailsRun", testMapElementFailure},
	{"ElementRetriesAlone", testMapElementRetry},
	{"CancelRunCancelsElements", testMapCancel},
	{"ElementsQueueFairly", testMapFairness},
	{"RetryRunMapsAnew", testMapRetryRun},
	{"InFlightCountsStepOnce", testMapInFlight},
}

// mapRun is list -> sq (mapping list) -> sum: the mapped task has the
// signature "wf/sq", the others "wf".
func mapRun() store.NewRun {
	return newRun("wf", "t", task("list"),
		store.NewTask{Name: "sq", Kind: store.KindMap, Parents: []string{"list"}, MaxAttempts: 2, Signature: "wf/sq"},
		task("sum", "sq"))
}

// mapped claims list, completes it with n elements, claims sq and maps it
// with limit; it returns the outcome of mapping.
func (f *fixture) mapped(r store.NewRun, n, limit int) store.CompletionOutcome {
	t := f.t
	list := f.claimOne()
	require.Equal(t, "list", list.Step)
	items := make([][]byte, n)
	for i := range items {
		items[i] = []byte(strconv.Itoa(i + 1))
	}
	f.complete(done(list, fmt.Sprintf("%q", items)))
	sq := f.claimOne()
	require.Equal(t, "sq", sq.Step)
	require.Equal(t, store.KindMap, sq.Kind)
	return f.complete(store.TaskResult{RunID: r.ID, Step: "sq", Attempt: sq.Attempt, Claim: sq.Claim, Outcome: store.OutcomeMapped,
		Elements: items, Each: "list", Limit: limit})[0]
}

func testMapCollects(f *fixture) {
	t := f.t
	r := mapRun()
	f.create(r)
	out := f.mapped(r, 3, 0)
	require.Equal(t, store.OutcomeMapped, out.Outcome)
	require.Equal(t, 3, out.Enqueued)
	require.Equal(t, store.TaskMapping, f.status(r.ID, "sq"))

	els := claimedBy(f.claim(10))
	require.Len(t, els, 3)
	for i := range 3 {
		el := els[store.ElementName("sq", i)]
		require.Equal(t, store.KindElement, el.Kind)
		require.Equal(t, i, el.Element)
		require.Equal(t, "wf/sq", el.Signature)
		require.Equal(t, 1, el.Attempt)
		require.Len(t, el.Parents, 1)
		require.Equal(t, "list", el.Parents[0].Step)
		require.Equal(t, strconv.Itoa(i+1), string(el.Parents[0].Output), "an element's claim hands its element as the mapped parent's output")
	}
	// Out of order, in two batches: the collected output is in element order.
	outs := f.complete(done(els["sq[2]"], "9"), done(els["sq[0]"], "1"))
	require.Equal(t, store.RunRunning, outs[1].RunStatus)
	require.Equal(t, store.TaskMapping, f.status(r.ID, "sq"))
	require.Equal(t, store.TaskPending, f.status(r.ID, "sum"))
	outs = f.complete(done(els["sq[1]"], `"four"`))
	require.Equal(t, 1, outs[0].Enqueued, "the last element enqueues the mapped task's child")

	tasks := f.tasks(r.ID)
	require.Equal(t, store.TaskCompleted, tasks["sq"].Status)
	require.JSONEq(t, `[1,"four",9]`, string(tasks["sq"].Output))
	require.Equal(t, 3, tasks["sq"].Elements)
	require.Equal(t, 2, tasks["sq[2]"].Element)

	sum := f.claimOne()
	require.Equal(t, "sum", sum.Step)
	require.JSONEq(t, `[1,"four",9]`, string(sum.Parents[0].Output))
	f.complete(done(sum, "14"))
	require.Equal(t, store.RunCompleted, f.run(r.ID).Status)

	list, err := f.st.ListTasks(f.ctx, r.ID)
	require.NoError(t, err)
	var names []string
	for _, tk := range list {
		names = append(names, tk.Name)
	}
	require.Equal(t, []string{"list", "sq", "sq[0]", "sq[1]", "sq[2]", "sum"}, names, "a mapped task's elements come right after it")

	ev := f.eventLog2(r.ID)
	var sqEvents []string
	for _, e := range ev {
		if e.Step == "sq" {
			sqEvents = append(sqEvents, string(e.Type)+" "+e.Detail)
		}
	}
	require.Equal(t, []string{"QUEUED ", "STARTED ", "MAPPED 3 elements", "COMPLETED "}, sqEvents)
	mappedAt, firstQueued := -1, -1
	for i, e := range ev {
		if e.Step == "sq" && e.Type == store.EventMapped {
			mappedAt = i
		}
		if e.Step == "sq[0]" && e.Type == store.EventQueued && firstQueued < 0 {
			firstQueued = i
		}
	}
	require.Less(t, mappedAt, firstQueued, "elements are queued after MAPPED")
}

func testMapLimit(f *fixture) {
	t := f.t
	r := mapRun()
	f.create(r)
	out := f.mapped(r, 5, 2)
	require.Equal(t, 2, out.Enqueued)
	seen := map[string]bool{}
	for round := 0; ; round++ {
		cts := f.claim(10)
		if len(cts) == 0 {
			break
		}
		require.LessOrEqual(t, len(cts), 2, "round %d: at most limit elements in flight", round)
		running := 0
		for _, tk := range f.tasks(r.ID) {
			if tk.Kind == store.KindElement && (tk.Status == store.TaskRunning || tk.Status == store.TaskQueued) {
				running++
			}
		}
		require.LessOrEqual(t, running, 2)
		// Finish one of them: exactly one more is admitted.
		ct := cts[0]
		if ct.Step == "sum" {
			f.complete(done(ct, "0"))
			continue
		}
		require.False(t, seen[ct.Step])
		seen[ct.Step] = true
		f.complete(done(ct, "1"))
		for _, rest := range cts[1:] {
			f.complete(store.TaskResult{RunID: r.ID, Step: rest.Step, Attempt: rest.Attempt, Claim: rest.Claim, Outcome: store.OutcomeRetry, Delay: 0, Error: "again"})
		}
		f.clock.advance(time.Millisecond)
		_, err := f.st.FireTimers(f.ctx, 10)
		require.NoError(t, err)
	}
	require.Len(t, seen, 5)
	require.Equal(t, store.RunCompleted, f.run(r.ID).Status)
}

func testMapElementFailure(f *fixture) {
	t := f.t
	r := mapRun()
	f.create(r)
	f.mapped(r, 4, 2)
	els := claimedBy(f.claim(10))
	require.Len(t, els, 2)
	outs := f.complete(store.TaskResult{RunID: r.ID, Step: "sq[1]", Attempt: 1, Claim: els["sq[1]"].Claim, Outcome: store.OutcomeFailed, Error: "bad"})
	require.Equal(t, store.RunFailed, outs[0].RunStatus)
	run := f.run(r.ID)
	require.Equal(t, "sq[1]", run.Failure.Step)
	tasks := f.tasks(r.ID)
	require.Equal(t, store.TaskCancelled, tasks["sq"].Status)
	require.Equal(t, store.TaskCancelled, tasks["sum"].Status)
	require.Equal(t, store.TaskCancelled, tasks["sq[2]"].Status, "a waiting element is cancelled")
	require.Equal(t, store.TaskCancelled, tasks["sq[3]"].Status)
	require.Equal(t, store.TaskRunning, tasks["sq[0]"].Status, "a running element may finish")
	require.Empty(t, f.claim(10))

	// Its late completion changes nothing else.
	outs = f.complete(done(els["sq[0]"], "1"))
	require.Equal(t, store.RunFailed, outs[0].RunStatus)
	require.Zero(t, outs[0].Enqueued)
	require.Equal(t, store.TaskCancelled, f.status(r.ID, "sq"))
	require.Empty(t, f.claim(10))
}

func testMapElementRetry(f *fixture) {
	t := f.t
	r := mapRun()
	f.create(r)
	f.mapped(r, 2, 0)
	els := claimedBy(f.claim(10))
	f.complete(store.TaskResult{RunID: r.ID, Step: "sq[0]", Attempt: 1, Claim: els["sq[0]"].Claim, Outcome: store.OutcomeRetry, Delay: time.Second, Error: "flaky"})
	f.complete(done(els["sq[1]"], "4"))
	require.Equal(t, store.TaskBackoff, f.status(r.ID, "sq[0]"))
	require.Equal(t, store.TaskMapping, f.status(r.ID, "sq"))
	f.clock.advance(time.Second)
	n, err := f.st.FireTimers(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	again := f.claimOne()
	require.Equal(t, "sq[0]", again.Step)
	require.Equal(t, 2, again.Attempt)
	require.Equal(t, 0, again.Element)
	require.Equal(t, "1", string(again.Parents[0].Output))
	f.complete(done(again, "1"))
	require.JSONEq(t, `[1,4]`, string(f.tasks(r.ID)["sq"].Output))
	require.Equal(t, 1, f.tasks(r.ID)["sq[1]"].Attempt)
}

func testMapCancel(f *fixture) {
	t := f.t
	r := mapRun()
	f.create(r)
	f.mapped(r, 3, 1)
	el := f.claimOne()
	ok, err := f.st.CancelRun(f.ctx, r.ID)
	require.NoError(t, err)
	require.True(t, ok)
	for name, tk := range f.tasks(r.ID) {
		if name != "list" {
			require.Equal(t, store.TaskCancelled, tk.Status, name)
		}
	}
	outs := f.complete(done(el, "1"))
	require.Equal(t, store.OutcomeStale, outs[0].Outcome)
	require.Empty(t, f.claim(10))
}

// testMapFairness maps many elements for one tenant, then starts another
// tenant's run: its task is claimed among the first, not after them.
func testMapFairness(f *fixture) {
	t := f.t
	const n = 100_000
	r := mapRun()
	f.create(r)
	f.mapped(r, n, 0)
	other := newRun("wf", "other", task("solo"))
	f.create(other)
	cts := f.claim(4)
	require.Contains(t, steps(cts), "solo", "another tenant's task waits for no more than a block of the map's elements")
}

func testMapRetryRun(f *fixture) {
	t := f.t
	r := mapRun()
	f.create(r)
	f.mapped(r, 3, 0)
	els := claimedBy(f.claim(10))
	f.complete(done(els["sq[0]"], "1"))
	f.complete(store.TaskResult{RunID: r.ID, Step: "sq[1]", Attempt: 1, Claim: els["sq[1]"].Claim, Outcome: store.OutcomeFailed, Error: "bad"})
	f.complete(done(els["sq[2]"], "9"))
	require.Equal(t, store.RunFailed, f.run(r.ID).Status)

	_, err := f.st.RetryRun(f.ctx, r.ID, store.Retry{Mode: store.RetryFailed, Operator: "alice"})
	require.NoError(t, err)
	tasks := f.tasks(r.ID)
	require.Equal(t, store.TaskCompleted, tasks["list"].Status, "kept")
	require.Equal(t, store.TaskQueued, tasks["sq"].Status, "the mapped task maps anew")
	require.Equal(t, store.TaskCancelled, tasks["sq[0]"].Status, "its elements wait to be mapped again")

	sq := f.claimOne()
	require.Equal(t, "sq", sq.Step)
	f.complete(store.TaskResult{RunID: r.ID, Step: "sq", Attempt: sq.Attempt, Claim: sq.Claim, Outcome: store.OutcomeMapped,
		Elements: [][]byte{[]byte("1"), []byte("2")}, Each: "list"})
	again := claimedBy(f.claim(10))
	require.Len(t, again, 2)
	require.Equal(t, 2, again["sq[1]"].Attempt, "a reused element's attempts count on")
	// The old attempt's late result is stale.
	outs := f.complete(done(els["sq[0]"], "stale"))
	require.Equal(t, store.OutcomeStale, outs[0].Outcome)
	f.complete(done(again["sq[0]"], "1"), done(again["sq[1]"], "4"))
	tasks = f.tasks(r.ID)
	require.JSONEq(t, `[1,4]`, string(tasks["sq"].Output))
	require.Equal(t, store.TaskCancelled, tasks["sq[2]"].Status, "an element past the new mapping stays cancelled")
	sum := f.claimOne()
	f.complete(done(sum, "5"))
	require.Equal(t, store.RunCompleted, f.run(r.ID).Status)
}

// testMapInFlight: before a deploy, a run with a mapped step under way
// counts once for the step's signature, under the step's name.
func testMapInFlight(f *fixture) {
	t := f.t
	r := mapRun()
	f.create(r)
	f.mapped(r, 5, 2)
	f.claim(1)
	rep, err := f.st.InFlight(f.ctx, nil, 3)
	require.NoError(t, err)
	var found bool
	for _, s := range rep.Signatures {
		if s.Signature == "wf/sq" {
			found = true
			require.Equal(t, "sq", s.Step)
			require.Equal(t, 1, s.Runs)
		}
	}
	require.True(t, found, "%+v", rep.Signatures)
}
