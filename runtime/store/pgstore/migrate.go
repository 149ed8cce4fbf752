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

// ErrSchemaVersion is wrapped by the error [New] returns when the schema is
// not at the version this binary needs: unmigrated, older (run [Migrate] or
// "dagen migrate up") or newer (the error also wraps [ErrSchemaTooNew]).
var ErrSchemaVersion = errors.New("database schema is not at the version this binary needs")

// ErrSchemaTooNew is wrapped by the errors of [Migrate] and [New] when the
// database schema is at a version newer than this binary knows: a newer
// dagen migrated it, and this one must not run against it. Those errors
// wrap [ErrSchemaVersion] too.
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
	_, err := ApplyMigrations(ctx, pool)
	return err
}

// ApplyMigrations is [Migrate], and it also returns the migrations this
// call applied, in order: none when the schema was up to date, or when a
// concurrent process applied them first. When a migration fails, it
// returns the ones applied before it with the error.
func ApplyMigrations(ctx context.Context, pool *pgxpool.Pool) ([]migrations.Migration, error) {
	all, err := migrations.All()
	if err != nil {
		return nil, fmt.Errorf("pgstore: migrate: %w", err)
	}
	q := dbsqlc.New()
	var applied []migrations.Migration
	for {
		m, err := migrateOne(ctx, pool, q, all)
		if err != nil {
			return applied, fmt.Errorf("pgstore: migrate: %w", err)
		}
		if m == nil {
			return applied, nil
		}
		applied = append(applied, *m)
	}
}

// migrateOne applies the next pending migration, in one transaction, and
// returns it. It returns nil when there is none.
func migrateOne(ctx context.Context, pool *pgxpool.Pool, q *dbsqlc.Queries, all []migrations.Migration) (*migrations.Migration, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op after Commit
	if err := q.MigrationLock(ctx, tx); err != nil {
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, migrationsTableDDL); err != nil {
		return nil, fmt.Errorf("create dagen_migrations: %w", err)
	}
	v, err := q.MigrationVersion(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case int(v) > len(all):
		sc, err := q.MigrationSchema(ctx, tx)
		if err != nil {
			return nil, fmt.Errorf("read schema name: %w", err)
		}
		return nil, &versionError{schema: sc.Schema, found: int(v), want: len(all)}
	case int(v) == len(all):
		return nil, commit(ctx, tx)
	}
	m := all[v]
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return nil, fmt.Errorf("apply %s: %w", m.Name, err)
	}
	if err := q.MigrationRecord(ctx, tx, int32(m.Version), m.Name); err != nil {
		return nil, fmt.Errorf("record %s: %w", m.Name, err)
	}
	if err := commit(ctx, tx); err != nil {
		return nil, fmt.Errorf("apply %s: %w", m.Name, err)
	}
	return &m, nil
}

func commit(ctx context.Context, tx pgx.Tx) error {
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
