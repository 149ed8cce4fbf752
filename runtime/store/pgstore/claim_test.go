package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestClaimLeavesOutKnownInputs checks that a claim sends no input for the
// runs the worker says it holds (ClaimParams.Known), and sends it for the
// others: a large input crosses the wire once to a worker.
func TestClaimLeavesOutKnownInputs(t *testing.T) {
	ctx := context.Background()
	s := stores(t, 1, nil)[0]
	held := newRun("w", "t1", step("a"), step("b"))
	held.Input = []byte(`"large"`)
	fresh := newRun("w", "t2", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{held, fresh}))
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w1", Limit: 10, Lease: time.Minute, Known: []dag.RunID{held.ID}})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	for _, c := range claimed {
		if c.RunID == held.ID {
			require.True(t, c.InputOmitted, "%s: left out", c.Step)
			require.Nil(t, c.Input)
		} else {
			require.False(t, c.InputOmitted)
			require.Equal(t, fresh.Input, c.Input)
		}
	}
}
