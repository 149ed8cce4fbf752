package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// TestCreateRunsErrors checks the errors of the one-round-trip create: an
// existing run is named, a tenant past the fair queue's limit is explained,
// and neither leaves anything behind.
func TestCreateRunsErrors(t *testing.T) {
	ctx := context.Background()
	s := stores(t, 1, nil)[0]

	existing := newRun("w", "t1", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{existing}))
	fresh := newRun("w", "t1", step("a"), step("b", "a"))
	err := s.CreateRuns(ctx, []store.NewRun{fresh, existing})
	require.ErrorIs(t, err, store.ErrRunExists)
	require.ErrorContains(t, err, existing.ID.String())
	_, err = s.GetRun(ctx, fresh.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "the batch is all or nothing")

	// The next tenant would get group id BlockLength: one too many.
	_, err = s.Pool().Exec(ctx, `SELECT setval('dagen_tenant_group_seq', $1)`, store.BlockLength-1)
	require.NoError(t, err)
	late := newRun("w", "one-too-many", step("a"))
	err = s.CreateRuns(ctx, []store.NewRun{late})
	require.ErrorContains(t, err, "more than 1048576 tenants")
	_, err = s.GetRun(ctx, late.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound)

	// Known tenants still get in.
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{newRun("w", "t1", step("a"))}))
}
