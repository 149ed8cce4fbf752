package pgstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/migrations"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 2)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	require.NoError(t, pgstore.Migrate(ctx, pool), "a second run changes nothing")
	all, err := migrations.All()
	require.NoError(t, err)
	var n, v int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), max(version) FROM dagen_migrations`).Scan(&n, &v))
	require.Equal(t, len(all), n, "each migration recorded once")
	require.Equal(t, len(all), v)
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	const procs = 4
	var wg sync.WaitGroup
	errs := make([]error, procs)
	for i := range procs {
		pool := pgtest.Pool(t, schema, 1) // one "process" each
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = pgstore.Migrate(ctx, pool)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	pool := pgtest.Pool(t, schema, 1)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM dagen_migrations`).Scan(&n))
	all, err := migrations.All()
	require.NoError(t, err)
	require.Equal(t, len(all), n)
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 2)
	// A newer dagen recorded version 999 and nothing this binary knows.
	_, err := pool.Exec(ctx, `
		CREATE TABLE dagen_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
		INSERT INTO dagen_migrations (version, name) VALUES (999, '999_future.up.sql')`)
	require.NoError(t, err)

	err = pgstore.Migrate(ctx, pool)
	require.ErrorIs(t, err, pgstore.ErrSchemaTooNew)
	require.ErrorIs(t, err, pgstore.ErrSchemaVersion)
	require.Contains(t, err.Error(), "version 999")

	var tables []string
	rows, err := pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"dagen_migrations"}, tables, "nothing applied")

	// Open reports the same, and leaves the schema as it was.
	_, err = pgstore.Open(ctx, withSearchPath(t, pgtest.URL(), schemaOf(t, pool)))
	require.ErrorIs(t, err, pgstore.ErrSchemaTooNew)
}

func TestMigrateRollsBackAFailingMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 2)
	// An object in the way makes migration 1 fail half way through its
	// statements: none of them may stay, nor a version row.
	_, err := pool.Exec(ctx, `CREATE TABLE dagen_timers (x int)`)
	require.NoError(t, err)
	err = pgstore.Migrate(ctx, pool)
	require.Error(t, err)
	require.Contains(t, err.Error(), "001_init.up.sql")
	var runs bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('dagen_runs') IS NOT NULL`).Scan(&runs))
	require.False(t, runs, "tables created before the failing statement were rolled back")
	var recorded bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('dagen_migrations') IS NOT NULL`).Scan(&recorded))
	require.False(t, recorded, "no version recorded (the version table came and went with the transaction)")

	_, err = pool.Exec(ctx, `DROP TABLE dagen_timers`)
	require.NoError(t, err)
	require.NoError(t, pgstore.Migrate(ctx, pool), "it applies once the obstacle is gone")
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	s, err := pgstore.Open(ctx, withSearchPath(t, pgtest.URL(), schema))
	require.NoError(t, err)
	defer s.Close()
	var v int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT max(version) FROM dagen_migrations`).Scan(&v))
	all, err := migrations.All()
	require.NoError(t, err)
	require.Equal(t, len(all), v)
}

func TestOpenBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name, url, want string
	}{
		{"malformed URL", "postgres://user:pw@host:notaport/db", "parse database URL"},
		{"unknown scheme", "mysql://127.0.0.1/db", "parse database URL"},
		{"unreachable", "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=5", "connect to 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := pgstore.Open(ctx, tc.url)
			require.Error(t, err)
			require.Nil(t, s)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "pw", "no password in the error")
		})
	}
}

// withSearchPath adds search_path to a postgres:// URL.
func withSearchPath(t *testing.T, url, schema string) string {
	t.Helper()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

func schemaOf(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&s))
	return s
}
