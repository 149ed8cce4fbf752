package storetest

import (
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// retrierTests check store.Retrier.
var retrierTests = []struct {
	name string
	fn   func(f *fixture, rt store.Retrier)
}{
	{"Modes", testRetryModes},
	{"Refused", testRetryRefused},
	{"StaleOldAttempts", testRetryStaleOldAttempts},
	{"RacingLateCompletion", testRetryRacingLateCompletion},
	{"RacingClaim", testRetryRacingClaim},
}

const onFailureName = "@onfailure"

// retryRun is a, b, c(a), d(b) and an onfailure task.
func retryRun() store.NewRun {
	return newRun("wf", "t", task("a"), task("b"), task("c", "a"), task("d", "b"),
		store.NewTask{Name: onFailureName, Kind: store.KindOnFailure, MaxAttempts: 1, Signature: "wf"})
}

// failedRun makes a run whose a failed while b ran: c and d are
// CANCELLED, b COMPLETED late with output "B", the onfailure task ran.
func (f *fixture) failedRun() store.NewRun {
	t := f.t
	r := retryRun()
	f.create(r)
	byStep := claimedBy(f.claim(10))
	require.Len(t, byStep, 2)
	a, b := byStep["a"], byStep["b"]
	f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: a.Attempt, Claim: a.Claim, Outcome: store.OutcomeFailed, Error: "boom"})
	f.complete(done(b, "B"))
	of := f.claimOne()
	require.Equal(t, onFailureName, of.Step)
	f.complete(done(of, ""))
	require.Equal(t, store.RunFailed, f.run(r.ID).Status)
	return r
}

// completedRun makes a COMPLETED run whose tasks output their names in
// upper case.
func (f *fixture) completedRun() store.NewRun {
	r := retryRun()
	f.create(r)
	f.drain(r.ID, func(step string) string { return upper(step) })
	require.Equal(f.t, store.RunCompleted, f.run(r.ID).Status)
	return r
}

func upper(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

func claimedBy(cts []store.ClaimedTask) map[string]store.ClaimedTask {
	m := make(map[string]store.ClaimedTask, len(cts))
	for _, ct := range cts {
		m[ct.Step] = ct
	}
	return m
}

// drain claims and completes the run's tasks with output(step) until none
// is ready, and returns the claimed tasks by step.
func (f *fixture) drain(id dag.RunID, output func(string) string) map[string]store.ClaimedTask {
	ran := make(map[string]store.ClaimedTask)
	for {
		cts := f.claim(10)
		if len(cts) == 0 {
			return ran
		}
		for _, ct := range cts {
			require.Equal(f.t, id, ct.RunID)
			_, twice := ran[ct.Step]
			require.False(f.t, twice, "%s ran twice", ct.Step)
			ran[ct.Step] = ct
			f.complete(done(ct, output(ct.Step)))
		}
	}
}

func testRetryModes(f *fixture, rt store.Retrier) {
	t := f.t
	cases := []struct {
		name     string
		setup    func(f *fixture) store.NewRun
		retry    store.Retry
		reset    []string
		enqueued []string
		kept     map[string]string // tasks not reset: status COMPLETED, output
	}{
		{"failed", (*fixture).failedRun, store.Retry{Mode: store.RetryFailed, Operator: "alice"},
			[]string{"a", "c", "d", onFailureName}, []string{"a", "d"}, map[string]string{"b": "B"}},
		{"failed+downstream", (*fixture).failedRun, store.Retry{Mode: store.RetryFailedDownstream, Operator: "alice"},
			[]string{"a", "c", "d", onFailureName}, []string{"a", "d"}, map[string]string{"b": "B"}},
		{"all on failed", (*fixture).failedRun, store.Retry{Mode: store.RetryAll},
			[]string{"a", "b", "c", "d", onFailureName}, []string{"a", "b"}, map[string]string{}},
		{"from on completed", (*fixture).completedRun, store.Retry{Mode: store.RetryFrom, From: "a", Operator: "bob"},
			[]string{"a", "c"}, []string{"a"}, map[string]string{"b": "B", "d": "D"}},
		{"from a leaf on completed", (*fixture).completedRun, store.Retry{Mode: store.RetryFrom, From: "d", Operator: "bob"},
			[]string{"d"}, []string{"d"}, map[string]string{"a": "A", "b": "B", "c": "C"}},
		{"all on completed", (*fixture).completedRun, store.Retry{Mode: store.RetryAll, Operator: "bob"},
			[]string{"a", "b", "c", "d"}, []string{"a", "b"}, map[string]string{}},
	}
	for _, tc := range cases {
		r := tc.setup(f)
		before := f.tasks(r.ID)
		startedBefore := f.countEvents(r.ID, store.EventStarted)
		res, err := rt.RetryRun(f.ctx, r.ID, tc.retry)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.reset, res.Reset, tc.name)
		require.Equal(t, tc.enqueued, res.Enqueued, tc.name)

		run := f.run(r.ID)
		require.Equal(t, store.RunRunning, run.Status, tc.name)
		require.Nil(t, run.Failure, tc.name)
		require.True(t, run.FinishedAt.IsZero(), tc.name)

		after := f.tasks(r.ID)
		for _, name := range tc.reset {
			tk := after[name]
			want := store.TaskPending
			if slices.Contains(tc.enqueued, name) {
				want = store.TaskQueued
			}
			require.Equal(t, want, tk.Status, "%s: %s", tc.name, name)
			require.Nil(t, tk.Output, "%s: %s", tc.name, name)
			require.Empty(t, tk.Error, "%s: %s", tc.name, name)
			require.True(t, tk.Finished.IsZero(), "%s: %s", tc.name, name)
			require.Equal(t, before[name].Attempt, tk.Attempt, "%s: %s: attempts never go back", tc.name, name)
		}
		for name, out := range tc.kept {
			require.Equal(t, store.TaskCompleted, after[name].Status, "%s: %s", tc.name, name)
			require.Equal(t, out, string(after[name].Output), "%s: %s keeps its output", tc.name, name)
		}

		var retried []string
		for _, ev := range f.eventLog2(r.ID) {
			if ev.Type == store.EventRetried {
				retried = append(retried, ev.Step)
				require.Equal(t, tc.retry.Detail(), ev.Detail, tc.name)
				require.Equal(t, before[ev.Step].Attempt, ev.Attempt, tc.name)
			}
		}
		require.Equal(t, tc.reset, retried, "%s: one RETRIED per reset task", tc.name)

		// The retried run runs its reset tasks, and only those, once more;
		// they read the kept outputs of the others.
		ran := f.drain(r.ID, func(step string) string { return step + "2" })
		var want []string
		for _, name := range tc.reset {
			if name != onFailureName {
				want = append(want, name)
			}
		}
		require.ElementsMatch(t, want, mapKeys(ran), tc.name)
		for step, ct := range ran {
			require.Greater(t, ct.Attempt, before[step].Attempt, "%s: %s counts attempts on", tc.name, step)
			for _, p := range ct.Parents {
				wantOut := p.Step + "2"
				if out, ok := tc.kept[p.Step]; ok {
					wantOut = out
				}
				require.Equal(t, store.TaskCompleted, p.Status, tc.name)
				require.Equal(t, wantOut, string(p.Output), "%s: %s reads %s", tc.name, step, p.Step)
			}
		}
		startedAfter := f.countEvents(r.ID, store.EventStarted)
		for _, name := range []string{"a", "b", "c", "d"} {
			want := startedBefore[name]
			if _, ok := ran[name]; ok {
				want++
			}
			require.Equal(t, want, startedAfter[name], "%s: %s: the log keeps the old attempts' events", tc.name, name)
		}
		run = f.run(r.ID)
		require.Equal(t, store.RunCompleted, run.Status, tc.name)
		require.False(t, run.FinishedAt.IsZero(), tc.name)
	}
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// eventLog2 is the run's event log as stored.
func (f *fixture) eventLog2(id dag.RunID) []store.Event {
	f.t.Helper()
	evs, err := f.st.ListEvents(f.ctx, id)
	require.NoError(f.t, err)
	return evs
}

func (f *fixture) countEvents(id dag.RunID, typ store.EventType) map[string]int {
	n := make(map[string]int)
	for _, ev := range f.eventLog2(id) {
		if ev.Type == typ {
			n[ev.Step]++
		}
	}
	return n
}

func testRetryRefused(f *fixture, rt store.Retrier) {
	t := f.t
	running := retryRun()
	f.create(running)
	_, err := rt.RetryRun(f.ctx, running.ID, store.Retry{Mode: store.RetryAll})
	require.ErrorIs(t, err, store.ErrNotRetryable, "a RUNNING run")
	require.Contains(t, err.Error(), "RUNNING")
	for range 2 {
		f.complete(done(f.claimOne(), "x"))
	}
	f.drain(running.ID, func(string) string { return "x" })

	completed := running // now COMPLETED
	require.Equal(t, store.RunCompleted, f.run(completed.ID).Status)
	for _, m := range []store.RetryMode{store.RetryFailed, store.RetryFailedDownstream} {
		_, err = rt.RetryRun(f.ctx, completed.ID, store.Retry{Mode: m})
		require.ErrorIs(t, err, store.ErrNotRetryable, "%s on a COMPLETED run", m)
	}
	_, err = rt.RetryRun(f.ctx, completed.ID, store.Retry{Mode: store.RetryFrom, From: "nope"})
	require.ErrorIs(t, err, store.ErrUnknownStep)
	require.ErrorIs(t, err, store.ErrInvalidRun)
	_, err = rt.RetryRun(f.ctx, completed.ID, store.Retry{Mode: store.RetryFrom, From: onFailureName})
	require.ErrorIs(t, err, store.ErrUnknownStep)
	_, err = rt.RetryRun(f.ctx, completed.ID, store.Retry{Mode: "bogus"})
	require.Error(t, err)
	_, err = rt.RetryRun(f.ctx, dag.NewRunID(), store.Retry{Mode: store.RetryAll})
	require.ErrorIs(t, err, store.ErrRunNotFound)

	failed := f.failedRun()
	_, err = rt.RetryRun(f.ctx, failed.ID, store.Retry{Mode: store.RetryFrom, From: "a"})
	require.ErrorIs(t, err, store.ErrNotRetryable, "d stays CANCELLED outside the retry")
	require.Contains(t, err.Error(), `"d"`)
	require.Equal(t, store.RunFailed, f.run(failed.ID).Status, "a refused retry changes nothing")
	require.Equal(t, store.TaskFailed, f.status(failed.ID, "a"))
	require.Empty(t, f.claim(10))
}

// testRetryStaleOldAttempts retries a failed run while b and the onfailure
// task still run: their old attempts' results are stale.
func testRetryStaleOldAttempts(f *fixture, rt store.Retrier) {
	t := f.t
	r := retryRun()
	f.create(r)
	byStep := claimedBy(f.claim(10))
	a, b := byStep["a"], byStep["b"]
	f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: a.Attempt, Claim: a.Claim, Outcome: store.OutcomeFailed, Error: "boom"})
	of := f.claimOne()
	require.Equal(t, onFailureName, of.Step)
	require.Equal(t, store.TaskRunning, f.status(r.ID, "b"))

	res, err := rt.RetryRun(f.ctx, r.ID, store.Retry{Mode: store.RetryAll, Operator: "alice"})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c", "d", onFailureName}, res.Reset)

	outs := f.complete(done(b, "old"), done(of, ""))
	require.Equal(t, store.OutcomeStale, outs[0].Outcome, "b's old attempt is stale")
	require.Equal(t, store.OutcomeStale, outs[1].Outcome, "the old onfailure attempt is stale")
	require.Equal(t, store.RunRunning, outs[0].RunStatus)
	require.Equal(t, store.TaskQueued, f.status(r.ID, "b"))
	require.Equal(t, store.TaskPending, f.status(r.ID, onFailureName))

	ran := f.drain(r.ID, func(s string) string { return s + "2" })
	require.ElementsMatch(t, []string{"a", "b", "c", "d"}, mapKeys(ran))
	require.Equal(t, b.Attempt+1, ran["b"].Attempt)
	require.Equal(t, store.RunCompleted, f.run(r.ID).Status)
	require.Equal(t, "b2", string(f.tasks(r.ID)["b"].Output))

	// A retried run that fails again runs its onfailure task again.
	r2 := retryRun()
	f.create(r2)
	byStep = claimedBy(f.claim(10))
	f.complete(store.TaskResult{RunID: r2.ID, Step: "a", Attempt: byStep["a"].Attempt, Claim: byStep["a"].Claim, Outcome: store.OutcomeFailed, Error: "boom"}, done(byStep["b"], "B"))
	f.complete(done(f.claimOne(), ""))
	_, err = rt.RetryRun(f.ctx, r2.ID, store.Retry{Mode: store.RetryFailed})
	require.NoError(t, err)
	byStep = claimedBy(f.claim(10))
	require.ElementsMatch(t, []string{"a", "d"}, mapKeys(byStep))
	f.complete(store.TaskResult{RunID: r2.ID, Step: "a", Attempt: byStep["a"].Attempt, Claim: byStep["a"].Claim, Outcome: store.OutcomeFailed, Error: "again"})
	run := f.run(r2.ID)
	require.Equal(t, store.RunFailed, run.Status)
	require.Equal(t, "again", run.Failure.Message)
	of2 := f.claimOne()
	require.Equal(t, onFailureName, of2.Step)
	require.Equal(t, "again", of2.Failure.Message)
}

// testRetryRacingLateCompletion races a retry with the late completion of
// the attempt it resets: whichever comes first, the task ends up queued
// again with no output, and the run completes.
func testRetryRacingLateCompletion(f *fixture, rt store.Retrier) {
	t := f.t
	for range 5 {
		r := retryRun()
		f.create(r)
		byStep := claimedBy(f.claim(10))
		a, b := byStep["a"], byStep["b"]
		f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: a.Attempt, Claim: a.Claim, Outcome: store.OutcomeFailed, Error: "boom"})
		f.complete(done(f.claimOne(), "")) // the onfailure task

		var wg sync.WaitGroup
		var outs []store.CompletionOutcome
		var cerr, rerr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			outs, cerr = f.st.CompleteTasks(f.ctx, []store.TaskResult{done(b, "late")})
		}()
		go func() {
			defer wg.Done()
			_, rerr = rt.RetryRun(f.ctx, r.ID, store.Retry{Mode: store.RetryAll})
		}()
		wg.Wait()
		require.NoError(t, cerr)
		require.NoError(t, rerr)
		require.Contains(t, []store.Outcome{store.OutcomeCompleted, store.OutcomeStale}, outs[0].Outcome)
		tk := f.tasks(r.ID)["b"]
		require.Equal(t, store.TaskQueued, tk.Status)
		require.Nil(t, tk.Output)
		ran := f.drain(r.ID, func(s string) string { return s + "2" })
		require.ElementsMatch(t, []string{"a", "b", "c", "d"}, mapKeys(ran))
		require.Equal(t, store.RunCompleted, f.run(r.ID).Status)
	}
}

// testRetryRacingClaim races a retry with a claim of the failed run's
// queued onfailure task: whichever comes first, the onfailure task ends up
// PENDING, a claimed attempt of it is stale, and the run completes.
func testRetryRacingClaim(f *fixture, rt store.Retrier) {
	t := f.t
	for range 5 {
		r := retryRun()
		f.create(r)
		byStep := claimedBy(f.claim(10))
		f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: byStep["a"].Attempt, Claim: byStep["a"].Claim, Outcome: store.OutcomeFailed, Error: "boom"}, done(byStep["b"], "B"))
		require.Equal(t, store.TaskQueued, f.status(r.ID, onFailureName))

		var wg sync.WaitGroup
		var claimed []store.ClaimedTask
		var cerr, rerr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			claimed, cerr = f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: "w2", Limit: 10, Lease: time.Minute})
		}()
		go func() {
			defer wg.Done()
			_, rerr = rt.RetryRun(f.ctx, r.ID, store.Retry{Mode: store.RetryFailed})
		}()
		wg.Wait()
		require.NoError(t, cerr)
		require.NoError(t, rerr)
		require.Equal(t, store.TaskPending, f.status(r.ID, onFailureName))
		ran := map[string]bool{}
		for _, ct := range claimed {
			out := f.complete(done(ct, ct.Step+"2"))
			if ct.Step == onFailureName {
				require.Equal(t, store.OutcomeStale, out[0].Outcome, "the onfailure attempt claimed before the retry")
				continue
			}
			ran[ct.Step] = true // claimed after the retry
		}
		for step := range f.drain(r.ID, func(s string) string { return s + "2" }) {
			require.False(t, ran[step], "%s ran twice", step)
			ran[step] = true
		}
		require.Equal(t, map[string]bool{"a": true, "c": true, "d": true}, ran)
		require.Equal(t, store.RunCompleted, f.run(r.ID).Status)
		require.Equal(t, store.TaskPending, f.status(r.ID, onFailureName))
	}
}
