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

// TestTxn checks the pipelined transaction of inTx: queued statements and
// COMMIT go in one send, and any failure, whether of a query or of a
// statement that was queued until COMMIT, rolls everything back and leaves
// the connection idle.
func TestTxn(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t, pgtest.Schema(t), 1) // one connection: each case reuses it
	_, err := pool.Exec(ctx, `CREATE TABLE t (n int PRIMARY KEY)`)
	require.NoError(t, err)
	s := New(pool, nil)
	count := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n))
		return n
	}
	insert := "-- name: Insert :exec\nINSERT INTO t VALUES ($1)"

	err = s.inTx(ctx, func(tx *txn) error {
		_, _ = tx.Exec(ctx, insert, 1)
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
			return err
		}
		require.Equal(t, 1, n, "BEGIN and the queued insert went with the query")
		_, _ = tx.Exec(ctx, insert, 2)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, count(), "the insert queued until COMMIT was committed")

	err = s.inTx(ctx, func(tx *txn) error {
		_, _ = tx.Exec(ctx, insert, 3)
		_, _ = tx.Exec(ctx, "-- name: InsertAgain :exec\nINSERT INTO t VALUES ($1)", 1)
		return nil
	})
	require.ErrorContains(t, err, "InsertAgain: ")
	require.Equal(t, 2, count(), "a statement failing at COMMIT rolls back the whole transaction")

	err = s.inTx(ctx, func(tx *txn) error {
		_, _ = tx.Exec(ctx, insert, 4)
		if _, err := tx.Query(ctx, `SELECT 1/0`); err != nil {
			return err
		}
		return nil
	})
	require.ErrorContains(t, err, "division by zero")
	require.Equal(t, 2, count())

	err = s.inTx(ctx, func(tx *txn) error {
		_, _ = tx.Exec(ctx, insert, 5)
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
			return err
		}
		return errNothingToDo
	})
	require.ErrorIs(t, err, errNothingToDo)
	require.Equal(t, 2, count(), "an error from fn rolls back what was sent")

	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	require.Equal(t, byte('I'), conn.Conn().PgConn().TxStatus(), "the connection went back idle")
}
