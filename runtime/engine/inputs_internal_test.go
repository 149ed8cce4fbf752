package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestInputCacheKeepsLargeRecentInputs checks the cache's bounds: small
// inputs are not kept, large ones are, up to cachedInputBytes, the least
// recently claimed dropped first; a left-out input is filled from what
// the claim was told, even if dropped since.
func TestInputCacheKeepsLargeRecentInputs(t *testing.T) {
	c := newInputCache()
	a, b, d, small := dag.NewRunID(), dag.NewRunID(), dag.NewRunID(), dag.NewRunID()
	big := make([]byte, cachedInputBytes/3+1) // three do not fit
	claim := func(ids ...dag.RunID) []store.ClaimedTask {
		var ts []store.ClaimedTask
		for _, id := range ids {
			in := big
			if id == small {
				in = []byte(`1`)
			}
			ts = append(ts, store.ClaimedTask{RunID: id, Input: in})
		}
		require.Empty(t, c.fill(ts, nil))
		return ts
	}
	claim(a, b, small)
	ids, held := c.known()
	require.ElementsMatch(t, []dag.RunID{a, b}, ids, "small inputs are not worth naming")
	claim(a) // a is now the most recent
	claim(d) // over the budget: b, the least recent, goes
	ids, _ = c.known()
	require.ElementsMatch(t, []dag.RunID{a, d}, ids)

	// b was dropped after the claim was told it was held: the claim's
	// copy fills it.
	ts := []store.ClaimedTask{{RunID: b, InputOmitted: true}, {RunID: small, InputOmitted: true}}
	missing := c.fill(ts, held)
	require.Len(t, ts[0].Input, len(big))
	require.False(t, ts[0].InputOmitted)
	require.Equal(t, []int{1}, missing, "a left-out input the worker never held")
}
