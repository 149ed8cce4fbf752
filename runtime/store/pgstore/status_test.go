package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/migrations"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

func allMigrations(t *testing.T) []migrations.Migration {
	t.Helper()
	all, err := migrations.All()
	require.NoError(t, err)
	require.NotEmpty(t, all)
	return all
}

// applyFirst brings pool's schema to version k the way an older dagen
// would have: the first k migrations, each recorded in dagen_migrations.
func applyFirst(t *testing.T, pool *pgxpool.Pool, k int) {
	t.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `CREATE TABLE dagen_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	for _, m := range allMigrations(t)[:k] {
		_, err := pool.Exec(ctx, m.SQL)
		require.NoError(t, err, m.Name)
		_, err = pool.Exec(ctx, `INSERT INTO dagen_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
		require.NoError(t, err)
	}
}

func TestMigrationStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	all := allMigrations(t)
	pool := pgtest.NewPool(t, 2)

	st, err := pgstore.MigrationStatus(ctx, pool)
	require.NoError(t, err, "an unmigrated schema is a status, not an error")
	require.Equal(t, schemaOf(t, pool), st.Schema)
	require.Equal(t, 0, st.Current)
	require.Equal(t, len(all), st.Latest)
	require.Len(t, st.Migrations, len(all))
	require.Len(t, st.Pending(), len(all))
	for i, m := range st.Migrations {
		require.Equal(t, pgstore.MigrationState{Version: all[i].Version, Name: all[i].Name, Known: true}, m)
	}
	require.ErrorIs(t, st.Err(), pgstore.ErrSchemaVersion)
	require.NotErrorIs(t, st.Err(), pgstore.ErrSchemaTooNew)
	var tables int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables))
	require.Zero(t, tables, "reading the status creates nothing")

	applied, err := pgstore.ApplyMigrations(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, all, applied)
	applied, err = pgstore.ApplyMigrations(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, applied, "nothing left to apply")

	st, err = pgstore.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, len(all), st.Current)
	require.Empty(t, st.Pending())
	require.NoError(t, st.Err())
	for _, m := range st.Migrations {
		require.True(t, m.Known && m.Applied, m.Name)
		require.False(t, m.AppliedAt.IsZero(), m.Name)
	}

	// A newer dagen recorded a version this binary does not know.
	_, err = pool.Exec(ctx, `INSERT INTO dagen_migrations (version, name) VALUES ($1, 'future.up.sql')`, len(all)+1)
	require.NoError(t, err)
	st, err = pgstore.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, len(all)+1, st.Current)
	require.Len(t, st.Migrations, len(all)+1)
	require.Equal(t, pgstore.MigrationState{Version: len(all) + 1, Name: "future.up.sql", Applied: true, AppliedAt: st.Migrations[len(all)].AppliedAt}, st.Migrations[len(all)])
	require.Empty(t, st.Pending())
	require.ErrorIs(t, st.Err(), pgstore.ErrSchemaTooNew)
}

// TestNewChecksSchemaVersion has New refuse every schema that is not at the
// latest version with an error that says what it found, what it needs and
// what to do, then accept the schema once migrated (where Migrate can).
func TestNewChecksSchemaVersion(t *testing.T) {
	t.Parallel()
	latest := len(allMigrations(t))
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, pool *pgxpool.Pool)
		found   int
		tooNew  bool
		stuck   bool // Migrate cannot repair it
		want    []string
	}{
		{
			name:    "unmigrated",
			prepare: func(*testing.T, *pgxpool.Pool) {},
			want:    []string{"is not migrated (version 0)", fmt.Sprintf("this dagen needs version %d", latest), `run "dagen migrate up -schema dagen_test_`, "(or pgstore.Migrate) first"},
		},
		{
			name:    "empty version table",
			prepare: func(t *testing.T, pool *pgxpool.Pool) { applyFirst(t, pool, 0) },
			want:    []string{"is not migrated (version 0)", fmt.Sprintf("this dagen needs version %d", latest), `run "dagen migrate up -schema dagen_test_`},
		},
		{
			name:    "older",
			prepare: func(t *testing.T, pool *pgxpool.Pool) { applyFirst(t, pool, latest-1) },
			found:   latest - 1,
			want:    []string{fmt.Sprintf("version %d", latest-1), fmt.Sprintf("this dagen needs version %d", latest), `run "dagen migrate up -schema dagen_test_`, "(or pgstore.Migrate) first"},
		},
		{
			name: "last row deleted",
			prepare: func(t *testing.T, pool *pgxpool.Pool) {
				require.NoError(t, pgstore.Migrate(context.Background(), pool))
				_, err := pool.Exec(context.Background(), `DELETE FROM dagen_migrations WHERE version = $1`, latest)
				require.NoError(t, err)
			},
			found: latest - 1,
			stuck: true, // the last migration's objects are there already
			want:  []string{fmt.Sprintf("version %d", latest-1), fmt.Sprintf("this dagen needs version %d", latest)},
		},
		{
			name: "newer",
			prepare: func(t *testing.T, pool *pgxpool.Pool) {
				require.NoError(t, pgstore.Migrate(context.Background(), pool))
				_, err := pool.Exec(context.Background(), `INSERT INTO dagen_migrations (version, name) VALUES ($1, 'future.up.sql')`, latest+1)
				require.NoError(t, err)
			},
			found:  latest + 1,
			tooNew: true,
			want:   []string{fmt.Sprintf("is at version %d, this dagen needs version %d", latest+1, latest), "newer than this binary", "upgrade dagen"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			schema := pgtest.Schema(t)
			pool := pgtest.Pool(t, schema, 2)
			tc.prepare(t, pool)

			s, err := pgstore.New(ctx, pool, nil)
			require.Nil(t, s)
			require.ErrorIs(t, err, pgstore.ErrSchemaVersion)
			require.Equal(t, tc.tooNew, errors.Is(err, pgstore.ErrSchemaTooNew), "errors.Is(err, ErrSchemaTooNew): %v", err)
			require.Contains(t, err.Error(), fmt.Sprintf("pgstore: schema %q ", schema))
			for _, want := range tc.want {
				require.Contains(t, err.Error(), want)
			}
			st, err := pgstore.MigrationStatus(ctx, pool)
			require.NoError(t, err)
			require.Equal(t, tc.found, st.Current)
			if tc.stuck {
				return
			}

			err = pgstore.Migrate(ctx, pool)
			if tc.tooNew {
				require.ErrorIs(t, err, pgstore.ErrSchemaTooNew)
				require.ErrorIs(t, err, pgstore.ErrSchemaVersion)
				return
			}
			require.NoError(t, err)
			s, err = pgstore.New(ctx, pool, nil)
			require.NoError(t, err, "migrated")
			s.Close()
		})
	}
}

// TestNewWithoutSchema has New name the missing schema problem when no
// schema of the search_path exists.
func TestNewWithoutSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 1)
	pgtest.Exec(t, "DROP SCHEMA "+schema)

	st, err := pgstore.MigrationStatus(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, "", st.Schema)
	require.Equal(t, 0, st.Current)
	_, err = pgstore.New(ctx, pool, nil)
	require.ErrorIs(t, err, pgstore.ErrSchemaVersion)
	require.Contains(t, err.Error(), "the search_path names no existing schema")
	require.Contains(t, err.Error(), `"dagen migrate up -schema NAME"`)
}

// TestApplyMigrationsFromOlder applies only what an older schema lacks.
func TestApplyMigrationsFromOlder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	all := allMigrations(t)
	pool := pgtest.NewPool(t, 2)
	applyFirst(t, pool, len(all)-1)
	applied, err := pgstore.ApplyMigrations(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, all[len(all)-1:], applied)
}
