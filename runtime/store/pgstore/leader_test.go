package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// TestLeaderElection: one of two stores on a schema leads; when it
// resigns, or lets its lease expire, the other takes over, and the old
// leader's duties are refused from then on (fencing).
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ss := stores(t, 2, nil)
	a, b := ss[0], ss[1]
	const lease = time.Minute

	lead, err := a.Lead(ctx, lease)
	require.NoError(t, err)
	require.True(t, lead)
	lead, err = a.Lead(ctx, lease)
	require.NoError(t, err)
	require.True(t, lead, "still leading")
	lead, err = b.Lead(ctx, lease)
	require.NoError(t, err)
	require.False(t, lead, "one leader per schema")

	require.NoError(t, a.Resign(ctx))
	lead, err = b.Lead(ctx, lease)
	require.NoError(t, err)
	require.True(t, lead, "b takes over after a resigns")
	_, err = b.RescueExpired(ctx, 10)
	require.NoError(t, err, "the leader's duty runs")

	// b stops renewing (a lost process, a partition): its lease expires,
	// a takes the lead, and b's duties are refused.
	lead, err = b.Lead(ctx, 300*time.Millisecond)
	require.NoError(t, err)
	require.True(t, lead)
	lead, err = a.Lead(ctx, lease)
	require.NoError(t, err)
	require.False(t, lead, "the lease has not expired yet")
	time.Sleep(400 * time.Millisecond)
	lead, err = a.Lead(ctx, lease)
	require.NoError(t, err)
	require.True(t, lead, "an expired lease goes to the next taker")
	_, err = b.RescueExpired(ctx, 10)
	require.ErrorIs(t, err, store.ErrNotLeader, "an old leader's duty is fenced")
	_, err = b.PruneRuns(ctx, time.Now(), 10)
	require.ErrorIs(t, err, store.ErrNotLeader, "an old leader's duty is fenced")
	lead, err = b.Lead(ctx, lease)
	require.NoError(t, err)
	require.False(t, lead, "the old leader learns it lost the lead")
	_, err = a.RescueExpired(ctx, 10)
	require.NoError(t, err)
	require.NoError(t, a.Resign(ctx))
}
