package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTasksTableHasOnlyItsPrimaryKey guards the property the hot path's
// speed rests on: no index of dagen_tasks covers a column that a task's
// transitions change, so those updates can be HOT and add no index entries.
// Leases live in dagen_leases for that reason.
func TestTasksTableHasOnlyItsPrimaryKey(t *testing.T) {
	ctx := context.Background()
	s := stores(t, 1, nil)[0]
	rows, err := s.Pool().Query(ctx, `
		SELECT indexname FROM pg_indexes
		WHERE schemaname = current_schema() AND tablename = 'dagen_tasks'`)
	require.NoError(t, err)
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"dagen_tasks_pkey"}, names,
		"an index on dagen_tasks beyond (run_id, name) makes every task update write index entries")
}
