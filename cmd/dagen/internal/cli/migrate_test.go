package cli_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/migrations"
)

// migrate runs dagen migrate sub on the test database's schema, with
// extra flags, and checks its exit code.
func migrate(t *testing.T, want int, sub, schema string, extra ...string) (string, string) {
	t.Helper()
	args := append([]string{"migrate", sub, "-db", pgtest.URL(), "-schema", schema}, extra...)
	code, out, errOut := dagen(t, args...)
	if code != want {
		t.Fatalf("dagen %s: exit %d, want %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out, errOut
}

func allMigrations(t *testing.T) []migrations.Migration {
	t.Helper()
	all, err := migrations.All()
	if err != nil || len(all) == 0 {
		t.Fatalf("migrations.All: %d, %v", len(all), err)
	}
	return all
}

func shortName(m migrations.Migration) string { return strings.TrimSuffix(m.Name, ".up.sql") }

// wantLines checks out line by line against patterns (regular
// expressions, anchored).
func wantLines(t *testing.T, out string, patterns ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(patterns) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(patterns), out)
	}
	for i, p := range patterns {
		if !regexp.MustCompile("^" + p + "$").MatchString(lines[i]) {
			t.Errorf("line %d: %q does not match %q\n%s", i+1, lines[i], p, out)
		}
	}
}

// TestMigrateLifecycle runs status and up on an empty schema, then on the
// schema they migrated.
func TestMigrateLifecycle(t *testing.T) {
	t.Parallel()
	all := allMigrations(t)
	latest := len(all)
	schema := pgtest.Schema(t)
	q := regexp.QuoteMeta

	out, _ := migrate(t, cli.ExitFailure, "status", schema)
	want := []string{q(fmt.Sprintf("schema %s is at version 0; this dagen knows version %d", schema, latest))}
	for _, m := range all {
		want = append(want, `  `+q(shortName(m))+` +pending`)
	}
	plural := "s"
	if latest == 1 {
		plural = ""
	}
	want = append(want, q(fmt.Sprintf(`%d migration%s pending: run "dagen migrate up -schema %s"`, latest, plural, schema)))
	wantLines(t, out, want...)

	out, _ = migrate(t, cli.ExitOK, "up", schema)
	want = nil
	for _, m := range all {
		want = append(want, q("applied "+shortName(m)))
	}
	want = append(want, q(fmt.Sprintf("schema %s is now at version %d", schema, latest)))
	wantLines(t, out, want...)

	out, _ = migrate(t, cli.ExitOK, "status", schema)
	want = []string{q(fmt.Sprintf("schema %s is at version %d; this dagen knows version %d", schema, latest, latest))}
	for _, m := range all {
		want = append(want, `  `+q(shortName(m))+` +applied  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	}
	wantLines(t, out, want...)

	out, _ = migrate(t, cli.ExitOK, "up", schema)
	wantLines(t, out, q(fmt.Sprintf("schema %s is up to date at version %d", schema, latest)))
}

// TestMigrateCreatesSchema has up create the schema -schema names.
func TestMigrateCreatesSchema(t *testing.T) {
	t.Parallel()
	schema := pgtest.Schema(t) // dropped again when the test ends
	pgtest.Exec(t, "DROP SCHEMA "+schema)

	out, _ := migrate(t, cli.ExitFailure, "status", schema)
	if !strings.HasPrefix(out, fmt.Sprintf("schema %s does not exist; this dagen knows version %d\n", schema, len(allMigrations(t)))) {
		t.Errorf("status of a missing schema:\n%s", out)
	}
	migrate(t, cli.ExitOK, "up", schema)
	migrate(t, cli.ExitOK, "status", schema)
}

// TestMigrateTooNew runs status and up on a schema a newer dagen migrated.
func TestMigrateTooNew(t *testing.T) {
	t.Parallel()
	latest := len(allMigrations(t))
	schema := pgtest.Schema(t)
	migrate(t, cli.ExitOK, "up", schema)
	pgtest.Exec(t, fmt.Sprintf("INSERT INTO %s.dagen_migrations (version, name) VALUES (%d, '%03d_future.up.sql')", schema, latest+1, latest+1))

	out, _ := migrate(t, cli.ExitFailure, "status", schema)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != latest+3 ||
		lines[0] != fmt.Sprintf("schema %s is at version %d; this dagen knows version %d", schema, latest+1, latest) ||
		!regexp.MustCompile(fmt.Sprintf(`^  %03d_future +applied  \S+  \(unknown to this dagen\)$`, latest+1)).MatchString(lines[latest+1]) ||
		lines[latest+2] != "the schema is newer than this dagen: upgrade dagen" {
		t.Errorf("status of a newer schema:\n%s", out)
	}

	out, errOut := migrate(t, cli.ExitFailure, "up", schema)
	if out != "" || !strings.Contains(errOut, fmt.Sprintf("is at version %d, this dagen needs version %d", latest+1, latest)) ||
		!strings.Contains(errOut, "upgrade dagen") {
		t.Errorf("up on a newer schema:\nstdout:\n%sstderr:\n%s", out, errOut)
	}
}

type migrationJSON struct {
	Version   int        `json:"version"`
	Name      string     `json:"name"`
	Known     *bool      `json:"known"`
	Applied   *bool      `json:"applied"`
	AppliedAt *time.Time `json:"applied_at"`
}

type statusJSON struct {
	Schema     string          `json:"schema"`
	Version    int             `json:"version"`
	Latest     int             `json:"latest"`
	State      string          `json:"state"`
	Migrations []migrationJSON `json:"migrations"`
}

type upJSON struct {
	Schema  string          `json:"schema"`
	Version int             `json:"version"`
	Latest  int             `json:"latest"`
	Applied []migrationJSON `json:"applied"`
	Error   string          `json:"error"`
}

func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, out)
	}
	return v
}

func TestMigrateJSON(t *testing.T) {
	t.Parallel()
	all := allMigrations(t)
	latest := len(all)
	schema := pgtest.Schema(t)

	st := decode[statusJSON](t, first(migrate(t, cli.ExitFailure, "status", schema, "-json")))
	if st.Schema != schema || st.Version != 0 || st.Latest != latest || st.State != "pending" || len(st.Migrations) != latest {
		t.Errorf("status of an empty schema: %+v", st)
	}
	for i, m := range st.Migrations {
		if m.Version != i+1 || m.Name != all[i].Name || !*m.Known || *m.Applied || m.AppliedAt != nil {
			t.Errorf("migration %d: %+v", i+1, m)
		}
	}

	up := decode[upJSON](t, first(migrate(t, cli.ExitOK, "up", schema, "-json")))
	if up.Schema != schema || up.Version != latest || up.Latest != latest || len(up.Applied) != latest || up.Error != "" {
		t.Errorf("up: %+v", up)
	}
	for i, m := range up.Applied {
		if m.Version != i+1 || m.Name != all[i].Name {
			t.Errorf("applied %d: %+v", i+1, m)
		}
	}
	up = decode[upJSON](t, first(migrate(t, cli.ExitOK, "up", schema, "-json")))
	if up.Applied == nil || len(up.Applied) != 0 || up.Version != latest {
		t.Errorf("second up: %+v", up)
	}

	st = decode[statusJSON](t, first(migrate(t, cli.ExitOK, "status", schema, "-json")))
	if st.Version != latest || st.State != "up-to-date" {
		t.Errorf("status after up: %+v", st)
	}
	for _, m := range st.Migrations {
		if !*m.Applied || m.AppliedAt == nil || m.AppliedAt.IsZero() {
			t.Errorf("migration %d: %+v", m.Version, m)
		}
	}

	pgtest.Exec(t, fmt.Sprintf("INSERT INTO %s.dagen_migrations (version, name) VALUES (%d, 'future.up.sql')", schema, latest+1))
	st = decode[statusJSON](t, first(migrate(t, cli.ExitFailure, "status", schema, "-json")))
	if st.Version != latest+1 || st.State != "too-new" || len(st.Migrations) != latest+1 || *st.Migrations[latest].Known {
		t.Errorf("status of a newer schema: %+v", st)
	}
	up = decode[upJSON](t, first(migrate(t, cli.ExitFailure, "up", schema, "-json")))
	if up.Version != latest+1 || !strings.Contains(up.Error, "upgrade dagen") {
		t.Errorf("up on a newer schema: %+v", up)
	}
}

func first(a, _ string) string { return a }

func TestMigrateUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate"}, "dagen migrate: missing command: up or status"},
		{[]string{"migrate", "-json"}, "dagen migrate: missing command: up or status"},
		{[]string{"migrate", "stauts"}, `dagen migrate: unknown command "stauts": did you mean status?`},
		{[]string{"migrate", "down"}, `dagen migrate: unknown command "down": want up or status`},
		{[]string{"migrate", "up", "now"}, `dagen migrate up: unexpected argument "now"`},
		{[]string{"migrate", "up", "-tags", "x"}, "flag provided but not defined: -tags"},
		{[]string{"migrate", "status", "-db", "postgres://u:secretpw@host:notaport/db"}, "dagen migrate status: parse database URL"},
		{[]string{"migrate", "status", "-db", "postgres://u:secretpw@127.0.0.1:1/db?sslmode=disable&connect_timeout=5"}, "dagen migrate status: pgstore: connect to 127.0.0.1:1"},
	} {
		code, out, errOut := dagen(t, tc.args...)
		if code != cli.ExitError || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "secretpw") {
			t.Errorf("dagen %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
	for _, args := range [][]string{{"migrate", "-h"}, {"migrate", "up", "-help"}} {
		if code, out, _ := dagen(t, args...); code != cli.ExitOK || !strings.Contains(out, "dagen migrate status [-db URL]") {
			t.Errorf("dagen %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// TestMigrateDatabaseURL reads the database from DATABASE_URL when -db is
// not given, and refuses to guess one. Not parallel: it sets the
// environment.
func TestMigrateDatabaseURL(t *testing.T) {
	url := pgtest.URL()
	schema := pgtest.Schema(t)
	for _, sub := range []string{"up", "status"} {
		t.Setenv("DATABASE_URL", "")
		code, out, errOut := dagen(t, "migrate", sub, "-schema", schema)
		if code != cli.ExitError || out != "" || errOut != "dagen migrate "+sub+": no database: set DATABASE_URL or pass -db URL\n" {
			t.Errorf("%s without a database: exit %d, stdout %q, stderr %q", sub, code, out, errOut)
		}
	}
	t.Setenv("DATABASE_URL", url)
	if code, out, errOut := dagen(t, "migrate", "up", "-schema", schema); code != cli.ExitOK {
		t.Errorf("up with DATABASE_URL: exit %d\n%s%s", code, out, errOut)
	}
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=5")
	if code, out, errOut := dagen(t, "migrate", "status", "-db", url, "-schema", schema); code != cli.ExitOK {
		t.Errorf("-db overrides DATABASE_URL: exit %d\n%s%s", code, out, errOut)
	}
}
