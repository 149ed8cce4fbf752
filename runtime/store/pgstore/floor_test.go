package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// TestClaimFloorLeavesNoStraggler checks the floor full claims begin at
// (see claimFloor): a queue row another transaction holds while full
// claims move the floor past it, and then gives back (that transaction
// rolls back), is claimed within a few claims all the same.
func TestClaimFloorLeavesNoStraggler(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil, 4)
	var runs []store.NewRun
	for range 400 { // more than the claims below take: none comes back short
		runs = append(runs, newRun("wf", "t", step("a")))
	}
	require.NoError(t, s.CreateRuns(ctx, runs))

	// Another claim holds the queue's first row.
	pool := s.Pool()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	var held [16]byte
	require.NoError(t, tx.QueryRow(ctx, `SELECT run_id FROM dagen_ready ORDER BY id LIMIT 1 FOR UPDATE`).Scan(&held))

	claim := func(n int) []store.ClaimedTask {
		t.Helper()
		got, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: n, Lease: time.Minute})
		require.NoError(t, err)
		return got
	}
	// Full claims of ten: the floor moves on past the held row.
	for range 5 {
		require.Len(t, claim(10), 10)
	}
	require.NoError(t, tx.Rollback(ctx))
	found := false
	for i := 0; i < 16 && !found; i++ {
		for _, c := range claim(10) {
			found = found || [16]byte(c.RunID) == held
		}
	}
	require.True(t, found, "the row given back is claimed within sixteen claims")
}
