package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrate brings the schema of a pool's search_path to what a test needs
// (pgstore.Migrate).
type Migrate func(ctx context.Context, pool *pgxpool.Pool) error

// Lender lends tests (the subtests of one test, or every test of a
// package) migrated schemas, or databases, of their own, and takes each
// back when its test ends: the schema is put back as the migration left it
// (the rows it made, its sequences; what the test added dropped) and lent
// again; all are dropped when the lender is closed (when the test that
// made it ends, or by TestMain).
//
// Migrating a schema costs the server far more CPU than the small tests of
// a conformance suite (each migration's DDL, the drop), and on Postgres 15
// a database costs more again (CREATE DATABASE copies its template through
// the WAL, DROP DATABASE waits for a checkpoint of what every other test
// dirtied): a suite of a hundred such tests pays it once for each place it
// uses at once, not once a test.
type Lender struct {
	databases bool // lend databases (their public schema), not schemas
	migrate   Migrate

	mu   sync.Mutex
	free []*place
	all  []string
}

// place is a schema or database a Lender made, and what its migration
// left in it.
type place struct {
	name string
	url  string // reaches it directly, its schema first on the search_path
	snap *snapshot
}

// NewSchemas returns a Lender of schemas of the test database, migrated
// by migrate, dropped when t ends. Get returns a schema's name.
func NewSchemas(t testing.TB, migrate Migrate) *Lender {
	return newLender(t, false, migrate)
}

// NewDatabases returns a Lender of databases of the test server, their
// public schema migrated by migrate (nil: left empty), dropped when t ends.
// Get returns a database's name. Through PgBouncer a test needs a database
// of its own: PgBouncer refuses a search_path in the startup packet.
func NewDatabases(t testing.TB, migrate Migrate) *Lender {
	return newLender(t, true, migrate)
}

// NewPackageSchemas is NewSchemas for every test of a package: TestMain
// makes it and runs the tests with RunLending.
func NewPackageSchemas(migrate Migrate) *Lender {
	return &Lender{migrate: migrate}
}

// NewPackageDatabases is NewDatabases for every test of a package, as
// NewPackageSchemas.
func NewPackageDatabases(migrate Migrate) *Lender {
	return &Lender{databases: true, migrate: migrate}
}

// RunLending runs a package's tests, then closes the lenders, and returns
// the exit code for TestMain: a failure to drop what they made fails the
// run.
func RunLending(m *testing.M, lenders ...*Lender) int {
	code := m.Run()
	for _, l := range lenders {
		if err := l.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

func newLender(t testing.TB, databases bool, migrate Migrate) *Lender {
	l := &Lender{databases: databases, migrate: migrate}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	return l
}

// Close drops what l made. Nothing may be lent then.
func (l *Lender) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, name := range l.all {
		errs = append(errs, l.drop(name))
	}
	l.all, l.free = nil, nil
	return errors.Join(errs...)
}

// Get lends t a place until t ends, made if none is free. The caller
// closes its connections to it before then: a t.Cleanup registered after
// Get runs before Get's.
func (l *Lender) Get(t testing.TB) string {
	t.Helper()
	l.mu.Lock()
	var p *place
	if n := len(l.free); n > 0 {
		p, l.free = l.free[n-1], l.free[:n-1]
	}
	l.mu.Unlock()
	if p == nil {
		p = l.make(t)
	}
	t.Cleanup(func() {
		if err := l.restore(p); err != nil {
			// Something still holds it, or the test dropped what the
			// migration made: it is not lent again.
			t.Logf("pgtest: %s not lent again: %v", p.name, err)
			l.mu.Lock()
			l.all = slices.DeleteFunc(l.all, func(n string) bool { return n == p.name })
			l.mu.Unlock()
			if err := l.drop(p.name); err != nil {
				t.Error(err)
			}
			return
		}
		l.mu.Lock()
		l.free = append(l.free, p)
		l.mu.Unlock()
	})
	return p.name
}

// make creates, migrates and records a new place.
func (l *Lender) make(t testing.TB) *place {
	t.Helper()
	var name string
	if l.databases {
		name = newDatabase(t)
	} else {
		name = newSchemaName()
		Exec(t, "CREATE SCHEMA "+name)
	}
	l.mu.Lock()
	l.all = append(l.all, name)
	l.mu.Unlock()

	url := SchemaURL(t, name)
	if l.databases {
		url = DatabaseURL(t, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if l.migrate != nil {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatalf("pgtest: parse: %v", err)
		}
		cfg.MaxConns = 2
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("pgtest: open pool: %v", err)
		}
		err = l.migrate(ctx, pool)
		pool.Close()
		if err != nil {
			t.Fatalf("pgtest: migrate %s: %v", name, err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	snap, err := takeSnapshot(ctx, conn, l.schema(name))
	if err != nil {
		t.Fatalf("pgtest: record %s: %v", name, err)
	}
	return &place{name: name, url: url, snap: snap}
}

// restore puts p back as its migration left it.
func (l *Lender) restore(p *place) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return p.snap.restore(ctx, conn, l.schema(p.name))
}

func (l *Lender) drop(name string) error {
	if l.databases {
		return execSQL("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	}
	return execSQL("DROP SCHEMA IF EXISTS " + name + " CASCADE")
}

// schema is the schema of place name.
func (l *Lender) schema(name string) string {
	if l.databases {
		return "public"
	}
	return name
}

// snapshot is what a migration left in a schema: its tables and
// sequences, the rows of each table that has any, and each sequence's
// state.
type snapshot struct {
	relations map[string]byte // name → relkind
	parents   []string        // tables that are no partition, to empty
	rows      map[string][]byte
	sequences map[string]sequenceState
}

type sequenceState struct {
	last   int64
	called bool
}

// relkindNames names each kind of relation relationsIn lists as DROP
// does.
var relkindNames = map[byte]string{'r': "TABLE", 'p': "TABLE", 'S': "SEQUENCE", 'v': "VIEW", 'm': "MATERIALIZED VIEW", 'f': "FOREIGN TABLE"}

// qualified is schema.name, quoted.
func qualified(schema, name string) string { return pgx.Identifier{schema, name}.Sanitize() }

// relationsIn lists schema's tables, views and sequences by name.
func relationsIn(ctx context.Context, conn *pgx.Conn, schema string) (map[string]byte, []string, error) {
	rows, err := conn.Query(ctx, `
		SELECT c.relname, c.relkind::text, c.relispartition
		FROM pg_class c
		WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'p', 'S', 'v', 'm', 'f')
		ORDER BY c.relname`, schema)
	if err != nil {
		return nil, nil, err
	}
	relations := map[string]byte{}
	var parents []string
	for rows.Next() {
		var name, kind string
		var partition bool
		if err := rows.Scan(&name, &kind, &partition); err != nil {
			return nil, nil, err
		}
		relations[name] = kind[0]
		if (kind == "r" || kind == "p") && !partition {
			parents = append(parents, name)
		}
	}
	return relations, parents, rows.Err()
}

func takeSnapshot(ctx context.Context, conn *pgx.Conn, schema string) (*snapshot, error) {
	relations, parents, err := relationsIn(ctx, conn, schema)
	if err != nil {
		return nil, err
	}
	s := &snapshot{relations: relations, parents: parents, rows: map[string][]byte{}, sequences: map[string]sequenceState{}}
	for name, kind := range relations {
		switch kind {
		case 'r':
			var buf bytes.Buffer
			if _, err := conn.PgConn().CopyTo(ctx, &buf, "COPY "+qualified(schema, name)+" TO STDOUT"); err != nil {
				return nil, fmt.Errorf("copy %s: %w", name, err)
			}
			if buf.Len() > 0 {
				s.rows[name] = buf.Bytes()
			}
		case 'S':
			var st sequenceState
			if err := conn.QueryRow(ctx, "SELECT last_value, is_called FROM "+qualified(schema, name)).Scan(&st.last, &st.called); err != nil {
				return nil, fmt.Errorf("read %s: %w", name, err)
			}
			s.sequences[name] = st
		}
	}
	return s, nil
}

// restore empties schema's tables and puts back the snapshot's rows and
// sequences, dropping the tables, views and sequences made since, in one
// transaction. It fails, changing nothing, when one of the snapshot's is
// gone or a lock is not had within seconds. A table that lost many rows
// is vacuumed after (the test server may not autovacuum).
func (s *snapshot) restore(ctx context.Context, conn *pgx.Conn, schema string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
		return err
	}
	now, _, err := relationsIn(ctx, tx.Conn(), schema)
	if err != nil {
		return err
	}
	for name := range s.relations {
		if _, ok := now[name]; !ok {
			return fmt.Errorf("%s is gone", name)
		}
	}
	for name, kind := range now {
		if _, ok := s.relations[name]; ok {
			continue
		}
		if _, err := tx.Exec(ctx, "DROP "+relkindNames[kind]+" IF EXISTS "+qualified(schema, name)+" CASCADE"); err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
	}
	var vacuum []string
	for _, name := range s.parents {
		tag, err := tx.Exec(ctx, "DELETE FROM "+qualified(schema, name))
		if err != nil {
			return fmt.Errorf("empty %s: %w", name, err)
		}
		if tag.RowsAffected() > 1000 {
			vacuum = append(vacuum, qualified(schema, name))
		}
	}
	for name, st := range s.sequences {
		if _, err := tx.Exec(ctx, "SELECT setval($1::regclass, $2, $3)", qualified(schema, name), st.last, st.called); err != nil {
			return fmt.Errorf("reset %s: %w", name, err)
		}
	}
	for name, rows := range s.rows {
		if _, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(rows), "COPY "+qualified(schema, name)+" FROM STDIN"); err != nil {
			return fmt.Errorf("restore %s: %w", name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	for _, table := range vacuum {
		if _, err := conn.Exec(ctx, "VACUUM "+table); err != nil {
			return fmt.Errorf("vacuum %s: %w", table, err)
		}
	}
	return nil
}
