package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/migrations"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// Status is the migration state of a schema, as [MigrationStatus] reads it.
type Status struct {
	// Schema is the schema the store's objects live in: the first schema
	// of the search_path that exists, "" when none does.
	Schema string
	// Current is the schema's version: the highest version recorded in
	// dagen_migrations, 0 when the schema is not migrated.
	Current int
	// Latest is the highest version this binary knows, the one [New]
	// needs.
	Latest int
	// Migrations lists every migration this binary knows, in version
	// order, followed by any version recorded in the schema that it does
	// not know (a newer dagen applied it).
	Migrations []MigrationState
}

// MigrationState is one migration and whether a schema has it.
type MigrationState struct {
	Version int
	// Name is the migration's file name, as dagen_migrations records it.
	Name string
	// Known is false for a version this binary does not have: a newer
	// dagen applied it.
	Known bool
	// Applied reports whether dagen_migrations records the version, and
	// AppliedAt when it was applied (zero when pending).
	Applied   bool
	AppliedAt time.Time
}

// Pending returns the migrations this binary knows that the schema lacks,
// in the order [Migrate] applies them.
func (s Status) Pending() []MigrationState {
	var out []MigrationState
	for _, m := range s.Migrations {
		if m.Known && !m.Applied {
			out = append(out, m)
		}
	}
	return out
}

// Err returns nil when the schema is at the version this binary needs,
// and otherwise an error wrapping [ErrSchemaVersion] (and [ErrSchemaTooNew]
// when the schema is newer) that names both versions and what to do.
func (s Status) Err() error {
	if s.Current == s.Latest {
		return nil
	}
	return fmt.Errorf("pgstore: %w", &versionError{schema: s.Schema, found: s.Current, want: s.Latest})
}

// MigrationStatus reads the migration state of the schema of pool's
// search_path: its version, the latest this binary knows, and which
// migrations it has. It changes nothing, and an unmigrated schema is not
// an error: its version is 0.
func MigrationStatus(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	all, err := migrations.All()
	if err != nil {
		return Status{}, fmt.Errorf("pgstore: migration status: %w", err)
	}
	q := dbsqlc.New()
	sc, err := q.MigrationSchema(ctx, pool)
	if err != nil {
		return Status{}, fmt.Errorf("pgstore: read schema version: %w", err)
	}
	var rows []dbsqlc.DagenMigration
	if sc.Migrated {
		if rows, err = q.MigrationList(ctx, pool); err != nil {
			return Status{}, fmt.Errorf("pgstore: read schema version of %q: %w", sc.Schema, err)
		}
	}
	st := Status{Schema: sc.Schema, Latest: len(all), Migrations: make([]MigrationState, len(all))}
	for i, m := range all {
		st.Migrations[i] = MigrationState{Version: m.Version, Name: m.Name, Known: true}
	}
	for _, r := range rows {
		v := int(r.Version)
		st.Current = max(st.Current, v)
		if v >= 1 && v <= len(all) {
			st.Migrations[v-1].Applied = true
			st.Migrations[v-1].AppliedAt = timeOf(r.AppliedAt)
			continue
		}
		st.Migrations = append(st.Migrations, MigrationState{Version: v, Name: r.Name, Applied: true, AppliedAt: timeOf(r.AppliedAt)})
	}
	return st, nil
}

// versionError is a schema at another version than this binary needs.
type versionError struct {
	schema      string // "" when no schema of the search_path exists
	found, want int
}

func (e *versionError) Error() string {
	where := fmt.Sprintf("schema %q", e.schema)
	migrate := `"dagen migrate up"`
	switch e.schema {
	case "":
		where = "the search_path names no existing schema, so it"
		migrate = `"dagen migrate up -schema NAME"`
	case "public":
	default:
		migrate = fmt.Sprintf(`"dagen migrate up -schema %s"`, e.schema)
	}
	switch {
	case e.found > e.want:
		return fmt.Sprintf("%s is at version %d, this dagen needs version %d: the schema is newer than this binary (a newer dagen migrated it); upgrade dagen", where, e.found, e.want)
	case e.found == 0:
		return fmt.Sprintf("%s is not migrated (version 0), this dagen needs version %d: run %s (or pgstore.Migrate) first", where, e.want, migrate)
	}
	return fmt.Sprintf("%s is at version %d, this dagen needs version %d: run %s (or pgstore.Migrate) first", where, e.found, e.want, migrate)
}

func (e *versionError) Unwrap() []error {
	if e.found > e.want {
		return []error{ErrSchemaVersion, ErrSchemaTooNew}
	}
	return []error{ErrSchemaVersion}
}
