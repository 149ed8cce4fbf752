package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
)

// migrateSeeded makes a table with a seed row and its sequence past it.
func migrateSeeded(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `
		CREATE TABLE seeded (id bigserial PRIMARY KEY, v text NOT NULL);
		INSERT INTO seeded (v) VALUES ('seed');
		CREATE TABLE parted (id int NOT NULL) PARTITION BY RANGE (id);
		CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (0) TO (10);`)
	return err
}

// TestLenderPutsSchemasBack: a schema lent again is as the migration left
// it: rows, sequences and tables added since are gone, the seed row is
// back; a schema whose migrated table was dropped is not lent again.
func TestLenderPutsSchemasBack(t *testing.T) {
	ctx := context.Background()
	schemas := pgtest.NewSchemas(t, migrateSeeded)
	var first string
	t.Run("dirty", func(t *testing.T) {
		first = schemas.Get(t)
		pool := pgtest.Pool(t, first, 2)
		_, err := pool.Exec(ctx, `
			INSERT INTO seeded (v) SELECT 'row ' || g FROM generate_series(1, 2000) g;
			CREATE TABLE parted_high PARTITION OF parted FOR VALUES FROM (10) TO (20);
			INSERT INTO parted VALUES (1), (15);
			CREATE TABLE extra (x int);
			CREATE SEQUENCE extra_seq;`)
		require.NoError(t, err)
	})
	t.Run("again", func(t *testing.T) {
		schema := schemas.Get(t)
		require.Equal(t, first, schema, "the free schema is lent again")
		pool := pgtest.Pool(t, schema, 2)
		r, err := pool.Query(ctx, "SELECT v FROM seeded ORDER BY id")
		require.NoError(t, err)
		rows, err := pgx.CollectRows(r, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, []string{"seed"}, rows)
		var id int64
		require.NoError(t, pool.QueryRow(ctx, "INSERT INTO seeded (v) VALUES ('next') RETURNING id").Scan(&id))
		require.EqualValues(t, 2, id, "the sequence is where the migration left it")
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_class
			WHERE relnamespace = $1::regnamespace AND relname IN ('extra', 'extra_seq', 'parted_high')`, schema).Scan(&n))
		require.Zero(t, n, "what the test made is dropped")
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM parted").Scan(&n))
		require.Zero(t, n)
		_, err = pool.Exec(ctx, "DROP TABLE seeded")
		require.NoError(t, err)
	})
	t.Run("replaced", func(t *testing.T) {
		schema := schemas.Get(t)
		require.NotEqual(t, first, schema, "a schema that lost a migrated table is not lent again")
		var n int
		require.NoError(t, pgtest.Pool(t, schema, 1).QueryRow(ctx, "SELECT count(*) FROM seeded").Scan(&n))
		require.Equal(t, 1, n)
	})
	var left int
	require.NoError(t, pgtest.Pool(t, "public", 1).QueryRow(ctx,
		"SELECT count(*) FROM pg_namespace WHERE nspname = $1", first).Scan(&left))
	require.Zero(t, left, "the schema that was not lent again is dropped")
}
