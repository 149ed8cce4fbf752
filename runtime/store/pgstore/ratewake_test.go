package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestFireTimersAdmitsForARateLimit checks that FireTimers reads a due
// wake of a rate limit's bucket (a row with no run and no task) and admits
// the task that can take the bucket's token, while the next one waits for
// the limit's next token, out of the fair queue.
func TestFireTimersAdmitsForARateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, nil, 4)
	require.NoError(t, s.PutRateLimits(ctx, []store.RateLimit{{Name: "stripe", Rate: 0.001, Burst: 1}}))
	newRun := func() dag.RunID {
		r := store.NewRun{ID: dag.NewRunID(), Workflow: "pay", Fingerprint: "fp", Tenant: "acme", Input: []byte(`{}`),
			Tasks: []store.NewTask{{Name: "charge", Kind: store.KindStep, Signature: "pay.charge", MaxAttempts: 3, RateLimit: "stripe"}}}
		require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
		return r.ID
	}
	first, second := newRun(), newRun()
	_, err := s.FireTimers(ctx, 10)
	require.NoError(t, err)

	places, err := s.QueuePlaces(ctx, first, []string{"charge"})
	require.NoError(t, err)
	require.Empty(t, places["charge"].RateLimited, "the first run took the bucket's token")
	places, err = s.QueuePlaces(ctx, second, []string{"charge"})
	require.NoError(t, err)
	require.Regexp(t, `^rate limit stripe: next token in \d+m\d+(\.\d+)?s$`, places["charge"].RateLimited)
	require.Zero(t, places["charge"].Ahead)
}
