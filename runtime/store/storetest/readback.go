package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// testReturnRun checks store.TaskResult.ReturnRun: the outcome of a result
// that asks for its run back and finishes it holds the run and its tasks
// as ReadRun reads them after the completion (completed or failed, over
// CompleteTasks and CompleteAndContinue); a result that does not ask, or
// does not finish its run, or is stale, gets none.
func testReturnRun(f *fixture) {
	t := f.t
	chain := newRun("wf", "t", task("a"), task("b", "a"))
	lone := newRun("wf", "t", task("x"))
	failing := newRun("wf", "t", task("y"))
	unasked := newRun("wf", "t", task("z"))
	f.create(chain, lone, failing, unasked)
	claimed := map[string]store.ClaimedTask{}
	for _, ct := range f.claim(4) {
		claimed[ct.Step] = ct
	}
	require.Len(t, claimed, 4)
	ask := func(r store.TaskResult) store.TaskResult { r.ReturnRun = true; return r }
	readBack := func(o store.CompletionOutcome, id any) {
		t.Helper()
		require.NotNil(t, o.Finished, "the outcome holds the run it finished")
		run, tasks, err := f.st.ReadRun(f.ctx, o.Finished.Run.ID)
		require.NoError(t, err)
		require.Equal(t, store.FinishedRun{Run: run, Tasks: tasks}, *o.Finished, "as ReadRun reads it")
		require.Equal(t, id, run.ID)
	}

	outs := f.complete(
		ask(done(claimed["a"], `1`)),
		ask(done(claimed["x"], `2`)),
		ask(store.TaskResult{RunID: failing.ID, Step: "y", Attempt: 1, Claim: claimed["y"].Claim, Outcome: store.OutcomeFailed, Error: "no"}),
		done(claimed["z"], `3`),
	)
	require.Nil(t, outs[0].Finished, "its run goes on")
	readBack(outs[1], lone.ID)
	require.Equal(t, store.RunCompleted, outs[1].Finished.Run.Status)
	require.Equal(t, []byte(`2`), outs[1].Finished.Tasks[0].Output)
	readBack(outs[2], failing.ID)
	require.Equal(t, store.RunFailed, outs[2].Finished.Run.Status)
	require.Nil(t, outs[3].Finished, "not asked for")
	require.Equal(t, store.RunCompleted, outs[3].RunStatus)

	outs = f.complete(ask(done(claimed["x"], `2`)))
	require.Equal(t, store.OutcomeStale, outs[0].Outcome)
	require.Nil(t, outs[0].Finished, "a stale result finishes nothing")

	b := ask(done(f.claimOne(), `4`))
	outs, _, err := f.st.CompleteAndContinue(f.ctx, []store.TaskResult{b},
		store.ClaimParams{Worker: "w1", Signatures: []string{"wf"}, Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	readBack(outs[0], chain.ID)
	require.Len(t, outs[0].Finished.Tasks, 2)
}
