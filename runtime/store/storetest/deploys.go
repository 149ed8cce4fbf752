package storetest

import (
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// deploysTests check store.Deploys, with store.Workers.
var deploysTests = []struct {
	name string
	fn   func(f *fixture, d store.Deploys, ws store.Workers)
}{
	{"ClaimBySignature", testClaimBySignature},
	{"UnservedFollowsLiveWorkers", testUnserved},
	{"ReportUnservedOncePerRound", testReportUnserved},
	{"InFlight", testInFlight},
}

// sigTask is a step task with its own signature.
func sigTask(name, signature string, parents ...string) store.NewTask {
	t := task(name, parents...)
	t.Signature = signature
	return t
}

// testClaimBySignature checks that a claim takes only tasks whose
// signature it names, that tasks of other signatures ahead in the queue
// neither block it nor are lost, and that a child is enqueued with its own
// signature.
func testClaimBySignature(f *fixture, _ store.Deploys, _ store.Workers) {
	t := f.t
	old := newRun("wf", "t1", sigTask("fetch", "fetch@1"), sigTask("publish", "publish@1", "fetch"))
	cur := newRun("wf", "t2", sigTask("fetch", "fetch@1"), sigTask("publish", "publish@2", "fetch"))
	f.create(old, cur)

	require.Empty(t, f.claim(10, "publish@1", "publish@2"), "no publish task is ready")
	fetched := f.claim(10, "fetch@1")
	require.Len(t, fetched, 2)
	for _, ct := range fetched {
		require.Equal(t, "fetch@1", ct.Signature)
	}
	f.complete(done(fetched[0], `"a"`), done(fetched[1], `"b"`))

	// A worker of the new build serves publish@2 only: old's publish,
	// ahead in the queue, stays QUEUED.
	got := f.claim(10, "fetch@1", "publish@2")
	require.Len(t, got, 1)
	require.Equal(t, cur.ID, got[0].RunID)
	require.Equal(t, "publish@2", got[0].Signature)
	require.Equal(t, []store.ParentResult{{Step: "fetch", Status: store.TaskCompleted, Output: []byte(`"b"`)}}, got[0].Parents)
	require.Equal(t, store.TaskQueued, f.status(old.ID, "publish"), "a task no claim serves waits")
	require.Equal(t, "publish@1", f.tasks(old.ID)["publish"].Signature)

	got = f.claim(10, "publish@1")
	require.Len(t, got, 1, "a worker of the old build takes it")
	require.Equal(t, old.ID, got[0].RunID)
	require.Equal(t, []store.ParentResult{{Step: "fetch", Status: store.TaskCompleted, Output: []byte(`"a"`)}}, got[0].Parents)
}

// testUnserved checks that a queued task is unserved until a live worker
// serves its signature, and again once that worker is gone.
func testUnserved(f *fixture, d store.Deploys, ws store.Workers) {
	t := f.t
	r := newRun("wf", "t", sigTask("a", "sig-a"), sigTask("b", "sig-b"), sigTask("c", "sig-c", "a"))
	f.create(r)
	queuedAt := f.clock.Now()
	f.clock.advance(time.Second)
	unserved := func() []string {
		t.Helper()
		us, err := d.Unserved(f.ctx, r.ID)
		require.NoError(t, err)
		var out []string
		for _, u := range us {
			require.Equal(t, r.ID, u.RunID)
			require.Equal(t, "wf", u.Workflow)
			require.True(t, u.Since.Equal(queuedAt), "since %v, want %v", u.Since, queuedAt)
			out = append(out, u.Step+"="+u.Signature)
		}
		return out
	}
	require.Equal(t, []string{"a=sig-a", "b=sig-b"}, unserved(), "no worker at all; c is PENDING, not waiting for a worker")

	require.NoError(t, d.Serve(f.ctx, "w1", store.Serving{Signatures: []string{"sig-a", "sig-x"}}))
	require.Equal(t, []string{"a=sig-a", "b=sig-b"}, unserved(), "a worker that never heartbeat is not alive")
	_, err := ws.Heartbeat(f.ctx, "w1", time.Minute, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"b=sig-b"}, unserved())

	require.NoError(t, d.Serve(f.ctx, "w1", store.Serving{Signatures: []string{"sig-b"}}))
	require.Equal(t, []string{"a=sig-a"}, unserved(), "Serve replaces what the worker serves")

	f.clock.advance(2 * time.Minute)
	require.Equal(t, []string{"a=sig-a", "b=sig-b"}, unserved(), "a worker whose heartbeat lapsed serves nothing")

	_, err = ws.Heartbeat(f.ctx, "w1", time.Minute, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"a=sig-a"}, unserved())
	_, err = ws.RetireWorker(f.ctx, "w1", false)
	require.NoError(t, err)
	require.Equal(t, []string{"a=sig-a", "b=sig-b"}, unserved(), "a retired worker serves nothing")

	_, err = d.Unserved(f.ctx, dag.NewRunID())
	require.ErrorIs(t, err, store.ErrRunNotFound)
}

// testReportUnserved checks that the WAITING event is logged once per
// queued round, only for tasks queued before the cutoff that no live
// worker serves.
func testReportUnserved(f *fixture, d store.Deploys, ws store.Workers) {
	t := f.t
	waiting := func(id dag.RunID) []string {
		t.Helper()
		events, err := f.st.ListEvents(f.ctx, id)
		require.NoError(t, err)
		var out []string
		for _, e := range events {
			if e.Type == store.EventWaiting {
				out = append(out, e.Step+": "+e.Detail)
			}
		}
		return out
	}
	report := func() int {
		t.Helper()
		n, err := d.ReportUnserved(f.ctx, 30*time.Second, 100)
		require.NoError(t, err)
		return n
	}
	r := newRun("wf", "t", sigTask("a", "sig-a"), sigTask("b", "sig-b"))
	f.create(r)
	require.NoError(t, d.Serve(f.ctx, "w1", store.Serving{Signatures: []string{"sig-b"}}))
	_, err := ws.Heartbeat(f.ctx, "w1", time.Hour, nil)
	require.NoError(t, err)

	require.Equal(t, 0, report(), "not queued for longer than the grace yet")
	f.clock.advance(time.Minute)
	require.Equal(t, 1, report())
	require.Equal(t, []string{"a: " + store.WaitingDetail("a", "sig-a")}, waiting(r.ID), "b is served")
	require.Equal(t, 0, report(), "once per round")
	require.Len(t, waiting(r.ID), 1)

	// A worker that serves a takes it; its attempt fails and is retried:
	// the new round waits again, and is reported again.
	ct := f.claim(1, "sig-a")
	require.Len(t, ct, 1)
	f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: ct[0].Attempt, Claim: ct[0].Claim, Outcome: store.OutcomeRetry, Error: "x", Delay: time.Second})
	f.clock.advance(time.Second)
	n, err := f.st.FireTimers(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	f.clock.advance(time.Minute)
	require.Equal(t, 1, report())
	require.Len(t, waiting(r.ID), 2)
	require.Equal(t, store.TaskQueued, f.status(r.ID, "a"), "reporting changes nothing of the task")
	require.Len(t, f.claim(1, "sig-a"), 1, "a reported task is claimed as any other")
}

// testInFlight checks the report dagen check -db reads.
func testInFlight(f *fixture, d store.Deploys, _ store.Workers) {
	t := f.t
	mk := func(workflow string) store.NewRun {
		return newRun(workflow, "t", sigTask("fetch", workflow+"/fetch"), sigTask("publish", workflow+"/publish", "fetch"))
	}
	a1, a2, b1, done1 := mk("a"), mk("a"), mk("b"), mk("a")
	f.create(a1, a2, b1, done1)
	ct := f.claim(10, "a/fetch")
	require.Len(t, ct, 3)
	for _, c := range ct {
		if c.RunID == done1.ID {
			f.complete(done(c, "1"))
		}
	}
	// done1 finishes: its tasks are not in flight.
	ct = f.claim(10, "a/publish")
	require.Len(t, ct, 1)
	f.complete(done(ct[0], "2"))
	require.Equal(t, store.RunCompleted, f.run(done1.ID).Status)

	require.NoError(t, d.RecordSignatures(f.ctx, []store.SignatureInfo{
		{Signature: "a/publish", Workflow: "a", Step: "publish", Kind: store.KindStep, Input: "In", Output: "Out",
			Parents: []store.SignatureParent{{Name: "fetch", Type: "Doc"}}},
	}))
	// Recording again, even with another description, changes nothing.
	require.NoError(t, d.RecordSignatures(f.ctx, []store.SignatureInfo{{Signature: "a/publish", Workflow: "a", Step: "other"}}))

	rep, err := d.InFlight(f.ctx, []string{"a/fetch", "a/publish", "b/fetch"}, 1)
	require.NoError(t, err)
	first := a1.ID
	if compareIDs(a2.ID, first) < 0 {
		first = a2.ID
	}
	require.Equal(t, []store.InFlight{
		{Signature: "a/fetch", Workflow: "a", Step: "fetch", Served: true, Runs: 2, Sample: []dag.RunID{first}},
		{Signature: "a/publish", Workflow: "a", Step: "publish", Served: true, Runs: 2, Sample: []dag.RunID{first},
			Info: &store.SignatureInfo{Signature: "a/publish", Workflow: "a", Step: "publish", Kind: store.KindStep, Input: "In", Output: "Out",
				Parents: []store.SignatureParent{{Name: "fetch", Type: "Doc"}}}},
		{Signature: "b/fetch", Workflow: "b", Step: "fetch", Served: true, Runs: 1, Sample: []dag.RunID{b1.ID}},
		{Signature: "b/publish", Workflow: "b", Step: "publish", Runs: 1, Sample: []dag.RunID{b1.ID}},
	}, rep.Signatures)
	require.Equal(t, []store.InFlightRuns{
		{Workflow: "a", Runs: 2, Stranded: 0, Sample: nil},
		{Workflow: "b", Runs: 1, Stranded: 1, Sample: []dag.RunID{b1.ID}},
	}, normalize(rep.Workflows))
}

// normalize makes empty samples nil, so both stores compare alike.
func normalize(ws []store.InFlightRuns) []store.InFlightRuns {
	ws = slices.Clone(ws)
	for i := range ws {
		if len(ws[i].Sample) == 0 {
			ws[i].Sample = nil
		}
	}
	return ws
}

func compareIDs(a, b dag.RunID) int { return slices.Compare(a[:], b[:]) }
