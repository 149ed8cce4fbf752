package pgstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestSharedReadsKeepOnlyWhatRowsShare: a claim whose rows share nothing
// keeps nothing for later rows; one whose rows share a run's fields or
// parents hands them on.
func TestSharedReadsKeepOnlyWhatRowsShare(t *testing.T) {
	a, b := dag.NewRunID(), dag.NewRunID()
	names, statuses, outputs := []string{"root"}, []string{"COMPLETED"}, [][]byte{[]byte("1")}

	alone := newSharedReads(2, func(int) (bool, bool) { return false, false })
	for _, id := range []dag.RunID{a, b} {
		c := store.ClaimedTask{RunID: id, Step: "s", Kind: store.KindStep}
		require.NoError(t, alone.run(&c, false, runFields{tenant: "t-" + id.String()}))
		require.NoError(t, alone.parents(&c, false, names, statuses, outputs))
		require.Equal(t, "t-"+id.String(), c.Tenant)
		require.Len(t, c.Parents, 1)
	}
	require.Nil(t, alone.runs, "no row shares a run: none kept")
	require.Nil(t, alone.byParents, "no row shares parents: none kept")

	flags := [][2]bool{{false, false}, {true, true}}
	shared := newSharedReads(len(flags), func(i int) (bool, bool) { return flags[i][0], flags[i][1] })
	first := store.ClaimedTask{RunID: a, Step: "b1", Kind: store.KindStep}
	require.NoError(t, shared.run(&first, false, runFields{tenant: "acme", input: []byte("in")}))
	require.NoError(t, shared.parents(&first, false, names, statuses, outputs))
	second := store.ClaimedTask{RunID: a, Step: "b2", Kind: store.KindStep}
	require.NoError(t, shared.run(&second, true, runFields{}))
	require.NoError(t, shared.parents(&second, true, names, nil, nil))
	require.Equal(t, "acme", second.Tenant)
	require.Equal(t, []byte("in"), second.Input)
	require.Equal(t, first.Parents, second.Parents)

	orphan := store.ClaimedTask{RunID: b, Step: "b1", Kind: store.KindStep}
	require.Error(t, shared.run(&orphan, true, runFields{}), "a shared row with no earlier row of its run")
}
