package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// fleetTests check store.Fleet, with store.Workers.
var fleetTests = []struct {
	name string
	fn   func(f *fixture, fl store.Fleet, ws store.Workers)
}{
	{"Workers", testFleetWorkers},
	{"Backlog", testFleetBacklog},
	{"QueuePlaces", testFleetQueuePlaces},
}

// testFleetWorkers checks the workers' view: heartbeats, liveness on the
// store's clock, the signatures each serves, and retirement.
func testFleetWorkers(f *fixture, fl store.Fleet, ws store.Workers) {
	t := f.t
	_, err := ws.Heartbeat(f.ctx, "w2", time.Minute, nil)
	require.NoError(t, err)
	beat := f.clock.Now()
	f.clock.advance(time.Second)
	_, err = ws.Heartbeat(f.ctx, "w1", 10*time.Second, nil)
	require.NoError(t, err)
	require.NoError(t, f.st.Serve(f.ctx, "w1", store.Serving{Signatures: []string{"sig-a", "sig-b"}, Concurrency: 64}))
	if el, ok := f.st.(store.Elector); ok {
		require.NoError(t, el.NameLeader(f.ctx, "w1"))
		require.NoError(t, el.NameLeader(f.ctx, "w2")) // the last to take the lead
	}
	f.clock.advance(30 * time.Second)

	workers, err := fl.Workers(f.ctx)
	require.NoError(t, err)
	require.Len(t, workers, 2)
	require.Equal(t, "w1", workers[0].ID)
	require.Equal(t, "w2", workers[1].ID)
	require.False(t, workers[0].Alive, "w1's 10 s ttl has passed")
	require.True(t, workers[1].Alive)
	require.False(t, workers[0].Leader, "a dead worker leads nothing")
	require.True(t, workers[1].Leader, "w2 took the lead last (or the store elects none: every alive worker leads)")
	require.True(t, workers[1].HeartbeatAt.Equal(beat), "heartbeat at %v, want %v", workers[1].HeartbeatAt, beat)
	require.True(t, workers[1].AliveUntil.Equal(beat.Add(time.Minute)))
	require.Equal(t, []string{"sig-a", "sig-b"}, workers[0].Signatures)
	require.Equal(t, 64, workers[0].Concurrency)
	require.Zero(t, workers[1].Concurrency, "w2 did not say")

	_, err = ws.RetireWorker(f.ctx, "w1", false)
	require.NoError(t, err)
	workers, err = fl.Workers(f.ctx)
	require.NoError(t, err)
	require.Len(t, workers, 1)
	require.Equal(t, "w2", workers[0].ID)
}

// testFleetBacklog checks the backlog's counts per tenant and workflow
// through queued, running, sleeping and retrying tasks, and that finished
// and cancelled runs count for nothing.
func testFleetBacklog(f *fixture, fl store.Fleet, _ store.Workers) {
	t := f.t
	f.create(
		newRun("wf", "t1", task("a"), task("b")),
		newRun("wf", "t1", task("a")),
		newRun("other", "t1", task("x")),
		newRun("wf", "t2", task("a"), task("c", "a")),
	)
	// backlog reads the backlog, and checks and clears each entry's
	// OldestQueued: the age of a queued task, none without one.
	backlog := func() []store.BacklogEntry {
		t.Helper()
		b, err := fl.Backlog(f.ctx)
		require.NoError(t, err)
		for i := range b {
			require.GreaterOrEqual(t, b[i].OldestQueued, time.Duration(0), "%+v", b[i])
			if b[i].Queued == 0 {
				require.Zero(t, b[i].OldestQueued, "no task queued, no age: %+v", b[i])
			}
			b[i].OldestQueued = 0
		}
		return b
	}
	require.Equal(t, []store.BacklogEntry{
		{Tenant: "t1", Workflow: "other", Queued: 1},
		{Tenant: "t1", Workflow: "wf", Queued: 3},
		{Tenant: "t2", Workflow: "wf", Queued: 1},
	}, backlog())

	claimed := f.claim(10)
	require.Len(t, claimed, 5)
	byKey := map[string]store.ClaimedTask{}
	for _, c := range claimed {
		byKey[c.Tenant+"/"+c.Workflow+"/"+c.Step+"/"+c.RunID.String()] = c
	}
	var sleeps, retries, completes []store.TaskResult
	for _, c := range claimed {
		switch {
		case c.Workflow == "other":
			retries = append(retries, store.TaskResult{RunID: c.RunID, Step: c.Step, Attempt: c.Attempt, Claim: c.Claim, Outcome: store.OutcomeRetry, Error: "x", Delay: time.Minute})
		case c.Tenant == "t2":
			completes = append(completes, done(c, "1"))
		case c.Step == "b":
			sleeps = append(sleeps, store.TaskResult{RunID: c.RunID, Step: c.Step, Attempt: c.Attempt, Claim: c.Claim, Outcome: store.OutcomeSleep, Delay: time.Hour})
		}
	}
	f.complete(append(append(sleeps, retries...), completes...)...)
	require.Equal(t, []store.BacklogEntry{
		{Tenant: "t1", Workflow: "other", Backoff: 1},
		{Tenant: "t1", Workflow: "wf", Running: 2, Sleeping: 1},
		{Tenant: "t2", Workflow: "wf", Queued: 1},
	}, backlog(), "t2's c is queued once a completes")

	// A cancelled run counts for nothing.
	for _, c := range claimed {
		if c.Workflow == "other" {
			_, err := f.st.CancelRun(f.ctx, c.RunID)
			require.NoError(t, err)
		}
	}
	require.Equal(t, []store.BacklogEntry{
		{Tenant: "t1", Workflow: "wf", Running: 2, Sleeping: 1},
		{Tenant: "t2", Workflow: "wf", Queued: 1},
	}, backlog())
}

// testFleetQueuePlaces checks where queued tasks stand in the fair queue:
// the tasks handed out before each, its tenant's among them, and that
// steps not queued, unknown steps and unknown runs are left out.
func testFleetQueuePlaces(f *fixture, fl store.Fleet, _ store.Workers) {
	t := f.t
	busy := newRun("wf", "t1", task("a"), task("b"), task("c"), task("d", "a"))
	other := newRun("wf", "t2", task("x"))
	f.create(busy, other)
	places := func(run dag.RunID, steps ...string) map[string]store.QueuePlace {
		t.Helper()
		p, err := fl.QueuePlaces(f.ctx, run, steps)
		require.NoError(t, err)
		return p
	}
	// t1's roots take blocks 0, 1 and 2, t2's x block 0: c is handed out
	// after a, b and x, whatever order the tenants' groups have.
	got := places(busy.ID, "a", "b", "c", "d", "nope")
	require.Equal(t, store.QueuePlace{Ahead: 3, TenantAhead: 2}, got["c"])
	require.Equal(t, 1, got["b"].TenantAhead)
	require.Contains(t, []int{1, 2}, got["b"].Ahead, "a, and x if t2's group comes first")
	require.Equal(t, 0, got["a"].TenantAhead)
	require.NotContains(t, got, "d", "d waits for its parent: not queued")
	require.NotContains(t, got, "nope")
	require.Len(t, got, 3)
	x := places(other.ID, "x")["x"]
	require.Equal(t, 0, x.TenantAhead)
	require.Equal(t, 1-got["a"].Ahead, x.Ahead, "a and x share block 0: one is first")

	// The head is handed out: what was behind it moves up.
	head := f.claimOne()
	require.Equal(t, store.QueuePlace{Ahead: 2, TenantAhead: 2 - btoi(head.Tenant == "t1")}, places(busy.ID, "c")["c"])
	require.NotContains(t, places(head.RunID, head.Step), head.Step, "a claimed task is not queued")
	require.Empty(t, places(dag.NewRunID(), "a"), "an unknown run")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
