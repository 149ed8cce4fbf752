package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLeaderElection: one of two stores on a schema leads; when it resigns
// or loses its connection, the other takes over.
func TestLeaderElection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ss := stores(t, 2, nil)
	a, b := ss[0], ss[1]

	lead, err := a.Lead(ctx)
	require.NoError(t, err)
	require.True(t, lead)
	lead, err = a.Lead(ctx)
	require.NoError(t, err)
	require.True(t, lead, "still leading")
	lead, err = b.Lead(ctx)
	require.NoError(t, err)
	require.False(t, lead, "one leader per schema")

	require.NoError(t, a.Resign(ctx))
	lead, err = b.Lead(ctx)
	require.NoError(t, err)
	require.True(t, lead, "b takes over after a resigns")

	// b's leader connection dies: b notices, and a can lead.
	_, err = a.Pool().Exec(ctx, `
		SELECT pg_terminate_backend(l.pid, 10000) FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid()
		  AND l.objid = (hashtext('dagen.leader.' || current_schema())::bigint & 4294967295)::oid`)
	require.NoError(t, err)
	lead, err = b.Lead(ctx)
	require.NoError(t, err)
	require.False(t, lead, "a lost connection is lost leadership")
	lead, err = a.Lead(ctx)
	require.NoError(t, err)
	require.True(t, lead)
	require.NoError(t, a.Resign(ctx))
}
