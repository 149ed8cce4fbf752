package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// tablePool returns a pool of size on a new schema with a table t (n int).
func tablePool(t *testing.T, size int32) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t, pgtest.Schema(t), size)
	_, err := pool.Exec(context.Background(), `CREATE TABLE t (n int PRIMARY KEY)`)
	require.NoError(t, err)
	return pool
}

// TestPipeline checks that queued statements (the Queuer's Exec, QueueSQL)
// run in order with the query that sends them, and that a failing one is
// named and stops the rest.
func TestPipeline(t *testing.T) {
	ctx := context.Background()
	pool := tablePool(t, 2)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	p := New(tx)
	for _, n := range []int{1, 2} {
		tag, err := p.Queue().Exec(ctx, "-- name: Insert :exec\nINSERT INTO t VALUES ($1)", n)
		require.NoError(t, err, "queued, not sent")
		require.Zero(t, tag.RowsAffected(), "queued, not sent")
	}
	var sum int
	require.NoError(t, p.QueryRow(ctx, `SELECT sum(n) FROM t`).Scan(&sum))
	require.Equal(t, 3, sum, "the queued inserts ran before the query")

	p.QueueSQL("-- name: InsertAgain :exec\nINSERT INTO t VALUES ($1)", 1)
	p.QueueSQL("INSERT INTO t VALUES (3)")
	err = p.Send(ctx)
	require.ErrorContains(t, err, "InsertAgain: ")
	require.ErrorContains(t, err, "duplicate key")
	require.NoError(t, tx.Rollback(ctx))

	// Over the pool, one send is one implicit transaction.
	p = New(pool)
	p.QueueSQL("INSERT INTO t VALUES (10)")
	p.QueueSQL("INSERT INTO t VALUES (10)")
	require.Error(t, p.Send(ctx))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n))
	require.Zero(t, n, "neither insert of the failed send stayed")
	rows, err := p.Query(ctx, `SELECT 1`)
	require.NoError(t, err)
	rows.Close()
}

// TestTxn checks the pipelined transaction of InTx: queued statements and
// COMMIT go in one send, and any failure, whether of a query or of a
// statement that was queued until COMMIT, rolls everything back and leaves
// the connection idle.
func TestTxn(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t, pgtest.Schema(t), 1) // one connection: each case reuses it
	_, err := pool.Exec(ctx, `CREATE TABLE t (n int PRIMARY KEY)`)
	require.NoError(t, err)
	count := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n))
		return n
	}
	insert := "-- name: Insert :exec\nINSERT INTO t VALUES ($1)"

	err = InTx(ctx, pool, func(tx *Tx) error {
		tx.QueueSQL(insert, 1)
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
			return err
		}
		require.Equal(t, 1, n, "BEGIN and the queued insert went with the query")
		tx.QueueSQL(insert, 2)
		return nil
	}, nil)
	require.NoError(t, err)
	require.Equal(t, 2, count(), "the insert queued until COMMIT was committed")

	err = InTx(ctx, pool, func(tx *Tx) error {
		tx.QueueSQL(insert, 3)
		tx.QueueSQL("-- name: InsertAgain :exec\nINSERT INTO t VALUES ($1)", 1)
		return nil
	}, nil)
	require.ErrorContains(t, err, "InsertAgain: ")
	require.Equal(t, 2, count(), "a statement failing at COMMIT rolls back the whole transaction")

	err = InTx(ctx, pool, func(tx *Tx) error {
		tx.QueueSQL(insert, 4)
		if _, err := tx.Query(ctx, `SELECT 1/0`); err != nil {
			return err
		}
		return nil
	}, nil)
	require.ErrorContains(t, err, "division by zero")
	require.Equal(t, 2, count())

	err = InTx(ctx, pool, func(tx *Tx) error {
		tx.QueueSQL(insert, 5)
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
			return err
		}
		return errRollBack
	}, nil)
	require.ErrorIs(t, err, errRollBack)
	require.Equal(t, 2, count(), "an error from fn rolls back what was sent")

	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	require.Equal(t, byte('I'), conn.Conn().PgConn().TxStatus(), "the connection went back idle")
}

// errRollBack is an error of a transaction's own.
var errRollBack = errors.New("roll back")

// countingDB counts the batches sent through it.
type countingDB struct {
	DB
	sends int
}

func (c *countingDB) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c.sends++
	return c.DB.SendBatch(ctx, b)
}

// TestQueryAhead checks queries sent ahead: their rows are read by the
// next Query with the same SQL and arguments, without another send; any
// other query discards them; and an error of theirs surfaces when read.
func TestQueryAhead(t *testing.T) {
	ctx := context.Background()
	pool := tablePool(t, 2)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	db := &countingDB{DB: tx}
	p := New(db)
	scanInts := func(rows pgx.Rows, err error) []int {
		t.Helper()
		require.NoError(t, err)
		ns, err := pgx.CollectRows(rows, pgx.RowTo[int])
		require.NoError(t, err)
		return ns
	}
	count := "SELECT count(*)::int FROM t WHERE n > $1"

	p.QueueSQL("INSERT INTO t VALUES (1), (2), (3)")
	p.QueryAhead(Record(func(db dbsqlc.DBTX) error { _, err := db.Query(ctx, count, 1); return err }))
	require.Equal(t, []int{1, 2, 3}, scanInts(p.Query(ctx, "SELECT n FROM t ORDER BY n")))
	require.Equal(t, []int{2}, scanInts(p.Query(ctx, count, 1)), "the query sent ahead saw the insert")
	require.Equal(t, 1, db.sends, "insert, query and the query sent ahead went in one batch")

	p.QueryAhead(Record(func(db dbsqlc.DBTX) error { _, err := db.Query(ctx, count, 1); return err }))
	require.Equal(t, []int{3}, scanInts(p.Query(ctx, "SELECT max(n) FROM t")))
	require.Equal(t, []int{1}, scanInts(p.Query(ctx, count, 2)), "other arguments: sent again, not read ahead")
	require.Equal(t, 2, db.sends, "the second query was sent alone, not in a batch")

	// QueryRow reads a row sent ahead too: here two, after a query.
	one := "SELECT n FROM t WHERE n = $1"
	sends := db.sends
	p.QueryAhead(Record(func(db dbsqlc.DBTX) error { return db.QueryRow(ctx, one, 2).Scan() }))
	p.QueryAhead(Record(func(db dbsqlc.DBTX) error { return db.QueryRow(ctx, one, 7).Scan() }))
	require.Equal(t, []int{3}, scanInts(p.Query(ctx, "SELECT max(n) FROM t")))
	var n int
	require.NoError(t, p.QueryRow(ctx, one, 2).Scan(&n))
	require.Equal(t, 2, n)
	require.ErrorIs(t, p.QueryRow(ctx, one, 7).Scan(&n), pgx.ErrNoRows, "no row: as QueryRow says it")
	require.Equal(t, sends+1, db.sends, "the rows sent ahead came with the query")
	require.Nil(t, p.open, "nothing left open")

	p.QueryAhead(Record(func(db dbsqlc.DBTX) error { _, err := db.Query(ctx, "-- name: Broken :many\nSELECT 1/0"); return err }))
	require.Equal(t, []int{3}, scanInts(p.Query(ctx, "SELECT max(n) FROM t")))
	rows, err := p.Query(ctx, "-- name: Broken :many\nSELECT 1/0")
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	require.ErrorContains(t, err, "division by zero")
	require.Nil(t, p.open, "nothing left open")

	require.Nil(t, p.open, "nothing left open")
}

// heapAfterGC returns the bytes of the heap that are reachable.
func heapAfterGC() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestLargeArgumentsAreReleased checks that a round trip that carried
// large arguments leaves nothing of their encoding reachable from its
// connection, back idle in the pool (releaseSQL): pgx kept the encoded
// arguments of a statement that had more parameters than the statements
// after it, until a statement with as many came. In both of the modes the
// store runs in: statements prepared on the connection, and described
// only (through PgBouncer).
func TestLargeArgumentsAreReleased(t *testing.T) {
	ctx := context.Background()
	big := make([]string, 100_000) // some 4.5 MB encoded
	for i := range big {
		big[i] = fmt.Sprintf("%040d", i)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := tablePool(t, 1).Config().Copy()
			cfg.ConnConfig.DefaultQueryExecMode = mode
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(t, err)
			defer pool.Close()
			p := New(pool)
			p.QueueSQL("SELECT 1")
			require.NoError(t, p.Send(ctx))
			before := heapAfterGC()

			// In a batch, followed by a statement with fewer parameters.
			p.QueueSQL("SELECT $1::integer, cardinality($2::text[]), cardinality($3::text[])", 1, []string{"a"}, big)
			p.QueueSQL("SELECT $1::integer", 1)
			require.NoError(t, p.Send(ctx))
			require.Less(t, heapAfterGC()-before, int64(1<<20), "bytes reachable after a batch")

			// A query alone.
			var n int
			require.NoError(t, p.QueryRow(ctx, "SELECT cardinality($1::text[]) + $2::integer + $3::integer", big, 1, 2).Scan(&n))
			require.Equal(t, len(big)+3, n)
			require.Less(t, heapAfterGC()-before, int64(1<<20), "bytes reachable after a query")
		})
	}
	runtime.KeepAlive(big)
}
