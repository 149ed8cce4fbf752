package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// testClaimCarriesTraceParent checks NewRun.TraceParent: every claim of a
// run's tasks hands it back, whether the claim is from the queue (with the
// input left out or not), a continuation, or the admission of a capped run;
// a run without one has none.
func testClaimCarriesTraceParent(f *fixture, c store.Continuer) {
	t := f.t
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const tp2 = "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b8-01"
	traced := newRun("wf", "t1", task("a"), task("b", "a"))
	traced.TraceParent = tp
	plain := newRun("wf", "t2", task("a"))
	// Capped runs of one key: the second waits for the first.
	first := newRun("capped", "t3", task("a"))
	second := newRun("capped", "t3", task("a"))
	for _, r := range []*store.NewRun{&first, &second} {
		r.Concurrency, r.ConcurrencyKey = 1, "k"
	}
	second.TraceParent = tp2
	f.create(traced, plain, first, second)

	claimed, err := f.st.ClaimTasks(f.ctx, store.ClaimParams{Worker: "w1", Limit: 10, Lease: time.Minute, Known: []dag.RunID{traced.ID}})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	byRun := map[dag.RunID]store.ClaimedTask{}
	for _, ct := range claimed {
		byRun[ct.RunID] = ct
	}
	require.Equal(t, tp, byRun[traced.ID].TraceParent, "with the input left out or not")
	require.Empty(t, byRun[plain.ID].TraceParent)
	require.Empty(t, byRun[first.ID].TraceParent)

	_, next := f.continueAs(c, 10, nil, nil, done(byRun[traced.ID], `1`), done(byRun[first.ID], `1`))
	steps := map[dag.RunID]string{}
	for _, ct := range next {
		steps[ct.RunID] = ct.TraceParent
	}
	// What was not started in the call was queued.
	for _, ct := range f.claim(10) {
		steps[ct.RunID] = ct.TraceParent
	}
	require.Equal(t, map[dag.RunID]string{traced.ID: tp, second.ID: tp2}, steps,
		"the traced run's next step, and the admitted run's root")
}
