package storetest

import (
	"context"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// RollBacker is what the rollback cases need of a store under test, beyond
// store.Store: a way to lose the last claim of a task, as a store does
// whose database is replaced by a standby that had not seen it yet. Every
// store the suite runs must have it (memstore in a test-only file; pgstore
// by writing the rows back in SQL), so the cases run on both.
type RollBacker interface {
	// RollBack makes the RUNNING task step of run look as it did before
	// its last claim: QUEUED at the attempt before, in the ready queue,
	// the claim forgotten. The worker that claimed it still holds it.
	RollBack(ctx context.Context, run dag.RunID, step string) error
}

// rollbackTests check that an attempt is fenced by its claim's token, not
// by its number: after a rollback a second claim of a task starts the same
// attempt number as the first, and the first claim's late result, made
// from what the lost history stored, is stale.
var rollbackTests = []struct {
	name string
	fn   func(f *fixture, rb RollBacker)
}{
	{"Result", testRollbackResult},
	{"Sleep", testRollbackSleep},
	{"SignalWait", testRollbackSignal},
	{"Element", testRollbackElement},
}

// rollBackAndClaimAgain loses lost's claim and claims its task again: the
// same attempt number, another claim.
func (f *fixture) rollBackAndClaimAgain(rb RollBacker, lost store.ClaimedTask) store.ClaimedTask {
	t := f.t
	t.Helper()
	require.NoError(t, rb.RollBack(f.ctx, lost.RunID, lost.Step))
	require.Equal(t, store.TaskQueued, f.status(lost.RunID, lost.Step))
	again := f.claimStep(lost.RunID, lost.Step)
	require.Equal(t, lost.Attempt, again.Attempt, "the rolled-back history hands out the attempt number again")
	require.NotZero(t, again.Claim)
	require.NotEqual(t, lost.Claim, again.Claim, "but not the claim token")
	return again
}

func testRollbackResult(f *fixture, rb RollBacker) {
	t := f.t
	r := newRun("wf", "t", task("a"), task("b", "a"))
	f.create(r)
	w1 := f.claimOne()
	w2 := f.rollBackAndClaimAgain(rb, w1)

	stale := f.complete(done(w1, `"lost"`))[0]
	require.Equal(t, store.OutcomeStale, stale.Outcome, "the lost claim's result is refused")
	require.Equal(t, store.TaskRunning, f.status(r.ID, "a"))
	require.Equal(t, store.OutcomeStale, f.complete(store.TaskResult{RunID: r.ID, Step: "a", Attempt: w1.Attempt, Claim: w1.Claim,
		Outcome: store.OutcomeFailed, Error: "lost"})[0].Outcome, "whatever its outcome")
	require.Equal(t, store.RunRunning, f.run(r.ID).Status)

	out := f.complete(done(w2, `"kept"`))[0]
	require.Equal(t, store.OutcomeCompleted, out.Outcome, "the new claim's result is applied")
	require.Equal(t, 1, out.Enqueued)
	require.Equal(t, []byte(`"kept"`), f.tasks(r.ID)["a"].Output)
	b := f.claimStep(r.ID, "b")
	require.Equal(t, []store.ParentResult{{Step: "a", Status: store.TaskCompleted, Output: []byte(`"kept"`)}}, b.Parents)
}

func testRollbackSleep(f *fixture, rb RollBacker) {
	t := f.t
	r := newRun("wf", "t", store.NewTask{Name: "nap", Kind: store.KindSleep, MaxAttempts: 1}, task("after", "nap"))
	f.create(r)
	w1 := f.claimOne()
	w2 := f.rollBackAndClaimAgain(rb, w1)
	sleep := func(ct store.ClaimedTask, d time.Duration) store.TaskResult {
		return store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeSleep, Delay: d}
	}

	require.Equal(t, store.OutcomeStale, f.complete(sleep(w1, time.Minute))[0].Outcome, "the lost claim's sleep is refused")
	require.Equal(t, store.TaskRunning, f.status(r.ID, "nap"))
	require.Equal(t, store.OutcomeSleep, f.complete(sleep(w2, time.Hour))[0].Outcome)
	require.Equal(t, store.OutcomeStale, f.complete(sleep(w1, time.Minute))[0].Outcome, "also once the task sleeps")
	require.Equal(t, store.TaskSleeping, f.status(r.ID, "nap"))

	f.clock.advance(2 * time.Minute)
	n, err := f.st.FireTimers(f.ctx, 10)
	require.NoError(t, err)
	require.Zero(t, n, "the task wakes when the new claim's sleep ends, not the lost one's")
	require.Equal(t, store.TaskSleeping, f.status(r.ID, "nap"))
	f.clock.advance(time.Hour)
	n, err = f.st.FireTimers(f.ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, store.TaskCompleted, f.status(r.ID, "nap"))
	f.claimStep(r.ID, "after")
}

func testRollbackSignal(f *fixture, rb RollBacker) {
	t := f.t
	r := waitRun()
	f.create(r)
	w1 := f.claimStep(r.ID, "approval")
	w2 := f.rollBackAndClaimAgain(rb, w1)

	require.Equal(t, store.OutcomeStale, f.complete(awaitFor(w1, time.Minute))[0].Outcome, "the lost claim's wait is refused")
	require.Equal(t, store.TaskRunning, f.status(r.ID, "approval"))
	require.Equal(t, store.OutcomeAwait, f.complete(awaitFor(w2, time.Hour))[0].Outcome)
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "approval"))
	require.Equal(t, store.OutcomeStale, f.complete(awaitFor(w1, time.Minute))[0].Outcome, "also once the task waits")

	f.clock.advance(2 * time.Minute)
	n, err := f.st.FireTimers(f.ctx, 10)
	require.NoError(t, err)
	require.Zero(t, n, "the wait ends when the new claim's wait ends")
	require.Equal(t, store.TaskAwaiting, f.status(r.ID, "approval"))
}

func testRollbackElement(f *fixture, rb RollBacker) {
	t := f.t
	r := mapRun()
	f.create(r)
	f.mapped(r, 2, 0)
	els := claimedBy(f.claim(10))
	require.Len(t, els, 2)
	w1 := els["sq[0]"]
	w2 := f.rollBackAndClaimAgain(rb, w1)

	require.Equal(t, store.OutcomeStale, f.complete(done(w1, "100"))[0].Outcome, "the lost claim's element is refused")
	require.Equal(t, store.OutcomeCompleted, f.complete(done(w2, "1"))[0].Outcome)
	out := f.complete(done(els["sq[1]"], "4"))[0]
	require.Equal(t, store.OutcomeCompleted, out.Outcome)
	require.Equal(t, 1, out.Enqueued, "the last element collects the mapped task, whose child is queued")
	require.Equal(t, store.CollectOutputs([][]byte{[]byte("1"), []byte("4")}), f.tasks(r.ID)["sq"].Output)
}
