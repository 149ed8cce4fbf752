package pgstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestIsDeadlockSeesThroughWrapping: an admission retries when Postgres
// aborted it to break a deadlock, as the pipeline and the statements
// wrap it, and not for another error.
func TestIsDeadlockSeesThroughWrapping(t *testing.T) {
	deadlock := &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}
	require.True(t, isDeadlock(fmt.Errorf("set the buckets' next looks: %w", fmt.Errorf("SetRateWakes: %w", deadlock))))
	require.False(t, isDeadlock(fmt.Errorf("lock buckets: %w", &pgconn.PgError{Code: "57014"})))
	require.False(t, isDeadlock(errors.New("deadlock detected")))
	require.False(t, isDeadlock(nil))
}
