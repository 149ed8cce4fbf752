package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// The tests of idempotency keys (NewRun.Key).
var keyTests = []struct {
	name string
	fn   func(f *fixture)
}{
	{"DuplicateFindsFirstRun", testKeyDuplicate},
	{"SameKeyTwiceInOneCall", testKeyTwiceInOneCall},
	{"PruneFreesKey", testKeyFreedByPrune},
}

func keyed(workflow, tenant, key string) store.NewRun {
	r := newRun(workflow, tenant, task("a"))
	r.Key = key
	return r
}

// createOne creates r and returns it as the store left it (Existing set
// for a duplicate).
func (f *fixture) createOne(r store.NewRun) store.NewRun {
	f.t.Helper()
	runs := []store.NewRun{r}
	require.NoError(f.t, f.st.CreateRuns(f.ctx, runs))
	return runs[0]
}

func testKeyDuplicate(f *fixture) {
	t := f.t
	first := f.createOne(keyed("wf", "t", "order-1"))
	require.True(t, first.Existing.IsZero(), "a new key creates the run")
	require.Equal(t, "order-1", f.run(first.ID).Key)

	runs := []store.NewRun{
		keyed("wf", "t", "order-1"),    // taken
		keyed("wf", "t2", "order-1"),   // another tenant
		keyed("other", "t", "order-1"), // another workflow
		keyed("wf", "t", "order-2"),    // another key
		newRun("wf", "t", task("a")),   // no key
	}
	require.NoError(t, f.st.CreateRuns(f.ctx, runs))
	require.Equal(t, first.ID, runs[0].Existing)
	_, err := f.st.GetRun(f.ctx, runs[0].ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "a duplicate is not created")
	for _, r := range runs[1:] {
		require.True(t, r.Existing.IsZero())
		require.Equal(t, store.RunRunning, f.run(r.ID).Status)
	}
	// Only the created runs' roots are queued.
	require.Len(t, f.claim(100), 5)
}

func testKeyTwiceInOneCall(f *fixture) {
	t := f.t
	runs := []store.NewRun{keyed("wf", "t", "k"), keyed("wf", "t", "k")}
	require.NoError(t, f.st.CreateRuns(f.ctx, runs))
	require.True(t, runs[0].Existing.IsZero())
	require.Equal(t, runs[0].ID, runs[1].Existing)
	require.Len(t, f.claim(10), 1)
}

func testKeyFreedByPrune(f *fixture) {
	t := f.t
	first := f.createOne(keyed("wf", "t", "k"))
	f.complete(done(f.claimOne(), "1"))
	require.Equal(t, store.RunCompleted, f.run(first.ID).Status)

	again := f.createOne(keyed("wf", "t", "k"))
	require.Equal(t, first.ID, again.Existing, "a finished run keeps its key while it is retained")

	f.clock.advance(time.Hour)
	n, err := f.st.PruneRuns(f.ctx, f.clock.Now().Add(-time.Minute), 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	third := f.createOne(keyed("wf", "t", "k"))
	require.True(t, third.Existing.IsZero(), "a pruned run's key is free")
	require.Equal(t, "k", f.run(third.ID).Key)
}
