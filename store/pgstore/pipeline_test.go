package pgstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
)

// TestPipeline checks that queued statements run in order with the query
// that sends them, and that a failing one is named and stops the rest.
func TestPipeline(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t, pgtest.Schema(t), 2)
	_, err := pool.Exec(ctx, `CREATE TABLE t (n int PRIMARY KEY)`)
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	p := &pipeline{db: tx}
	for _, n := range []int{1, 2} {
		_, err := p.Exec(ctx, "-- name: Insert :exec\nINSERT INTO t VALUES ($1)", n)
		require.NoError(t, err, "queued, not sent")
	}
	var sum int
	require.NoError(t, p.QueryRow(ctx, `SELECT sum(n) FROM t`).Scan(&sum))
	require.Equal(t, 3, sum, "the queued inserts ran before the query")

	_, _ = p.Exec(ctx, "-- name: InsertAgain :exec\nINSERT INTO t VALUES ($1)", 1)
	_, _ = p.Exec(ctx, "INSERT INTO t VALUES (3)")
	err = p.send(ctx)
	require.ErrorContains(t, err, "InsertAgain: ")
	require.ErrorContains(t, err, "duplicate key")
	require.NoError(t, tx.Rollback(ctx))

	// Over the pool, one send is one implicit transaction.
	p = &pipeline{db: pool}
	_, _ = p.Exec(ctx, "INSERT INTO t VALUES (10)")
	_, _ = p.Exec(ctx, "INSERT INTO t VALUES (10)")
	require.Error(t, p.send(ctx))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n))
	require.Zero(t, n, "neither insert of the failed send stayed")
	rows, err := p.Query(ctx, `SELECT 1`)
	require.NoError(t, err)
	rows.Close()
}
