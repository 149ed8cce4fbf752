package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/migrations"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// ErrSchemaTooNew is returned by [Migrate] when the database schema is at a
// version newer than this binary knows: a newer dagen migrated it, and this
// one must not run against it.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

//go:embed migrations_table.sql
var migrationsTableDDL string

// Migrate brings the schema of pool's search_path up to the latest version
// this binary knows. Each migration runs in its own transaction together
// with its row in dagen_migrations, so none is ever half-applied, under a
// transaction-scoped advisory lock per schema, so processes that start at
// once apply each migration once. Running it on an up-to-date schema
// changes nothing. A schema at a newer version is left alone and reported
// with an error wrapping [ErrSchemaTooNew].
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	all, err := migrations.All()
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	q := dbsqlc.New()
	for {
		done, err := migrateOne(ctx, pool, q, all)
		if err != nil {
			return fmt.Errorf("pgstore: migrate: %w", err)
		}
		if done {
			return nil
		}
	}
}

// migrateOne applies the next pending migration, in one transaction. It
// reports done when there is none.
func migrateOne(ctx context.Context, pool *pgxpool.Pool, q *dbsqlc.Queries, all []migrations.Migration) (done bool, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op after Commit
	if err := q.MigrationLock(ctx, tx); err != nil {
		return false, fmt.Errorf("take migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, migrationsTableDDL); err != nil {
		return false, fmt.Errorf("create dagen_migrations: %w", err)
	}
	v, err := q.MigrationVersion(ctx, tx)
	if err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case int(v) > len(all):
		return false, fmt.Errorf("%w: database is at version %d, this binary knows up to %d; upgrade dagen", ErrSchemaTooNew, v, len(all))
	case int(v) == len(all):
		return true, commit(ctx, tx)
	}
	m := all[v]
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("apply %s: %w", m.Name, err)
	}
	if err := q.MigrationRecord(ctx, tx, int32(m.Version), m.Name); err != nil {
		return false, fmt.Errorf("record %s: %w", m.Name, err)
	}
	if err := commit(ctx, tx); err != nil {
		return false, fmt.Errorf("apply %s: %w", m.Name, err)
	}
	return false, nil
}

func commit(ctx context.Context, tx pgx.Tx) error {
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
