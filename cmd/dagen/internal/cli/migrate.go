package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/internal/analysis"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// migrateCommands are the subcommands of dagen migrate.
var migrateCommands = []string{"up", "status"}

// migrateFlags are the flags of dagen migrate.
type migrateFlags struct {
	db, schema string
	json       bool
}

// migrate runs dagen migrate with args (after "migrate"). Flags may come
// before or after the subcommand.
func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f migrateFlags
	fs := flag.NewFlagSet("dagen migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.db, "db", "", "database URL")
	fs.StringVar(&f.schema, "schema", "", "schema to migrate")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	var sf shardFlags
	addShardFlags(fs, &sf)
	sub := ""
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, usage)
				return ExitOK
			}
			fmt.Fprintf(stderr, "dagen migrate: %v\nRun 'dagen --help' for usage.\n", err)
			return ExitError
		}
		if sub != "" || fs.NArg() == 0 {
			break
		}
		sub, args = fs.Arg(0), fs.Args()[1:]
	}
	switch {
	case sub == "":
		fmt.Fprintf(stderr, "dagen migrate: missing command: up or status\nRun 'dagen --help' for usage.\n")
		return ExitError
	case sub != "up" && sub != "status":
		if s := analysis.Suggest(sub, migrateCommands); s != "" {
			fmt.Fprintf(stderr, "dagen migrate: unknown command %q: did you mean %s?\n", sub, s)
		} else {
			fmt.Fprintf(stderr, "dagen migrate: unknown command %q: want up or status\n", sub)
		}
		return ExitError
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "dagen migrate %s: unexpected argument %q\n", sub, fs.Arg(0))
		return ExitError
	}
	if sf = sf.withEnv(); sf.shards != "" {
		if f.db != "" {
			fmt.Fprintf(stderr, "dagen migrate %s: %v\n", sub, errShardsAndDB)
			return ExitError
		}
		return migrateShards(ctx, sub, f, sf, stdout, stderr)
	}
	url, code := databaseURL(f.db, "migrate "+sub, stderr)
	if code != ExitOK {
		return code
	}
	pool, err := connect(ctx, url, f.schema)
	if err != nil {
		fmt.Fprintf(stderr, "dagen migrate %s: %v\n", sub, err)
		return ExitError
	}
	defer pool.Close()
	if sub == "up" {
		return migrateUp(ctx, pool, f, stdout, stderr)
	}
	return migrateStatus(ctx, pool, f, stdout, stderr)
}

// databaseURL returns flag, or $DATABASE_URL when flag is empty; with
// neither it says so for cmd and returns ExitError.
func databaseURL(flag, cmd string, stderr io.Writer) (string, int) {
	url := flag
	if url == "" {
		url = os.Getenv("DATABASE_URL")
	}
	if url == "" {
		fmt.Fprintf(stderr, "dagen %s: no database: set DATABASE_URL or pass -db URL\n", cmd)
		return "", ExitError
	}
	return url, ExitOK
}

// connect opens a pool on url whose search_path is schema (when set) and
// checks that the database answers (pgstore.OpenPool: behind PgBouncer in
// transaction mode, without named prepared statements).
func connect(ctx context.Context, url, schema string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	cfg.MaxConns = 2
	return pgstore.OpenPool(ctx, cfg)
}

// migrationJSON is a migration in -json output.
type migrationJSON struct {
	Version   int        `json:"version"`
	Name      string     `json:"name"`
	Known     *bool      `json:"known,omitempty"`
	Applied   *bool      `json:"applied,omitempty"`
	AppliedAt *time.Time `json:"applied_at,omitempty"`
}

// upJSON is the -json output of migrate up.
type upJSON struct {
	Schema  string          `json:"schema"`
	Version int             `json:"version"`
	Latest  int             `json:"latest"`
	Applied []migrationJSON `json:"applied"`
	Error   string          `json:"error,omitempty"`
}

func migrateUp(ctx context.Context, pool *pgxpool.Pool, f migrateFlags, stdout, stderr io.Writer) int {
	if f.schema != "" {
		if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{f.schema}.Sanitize()); err != nil {
			fmt.Fprintf(stderr, "dagen migrate up: create schema %s: %v\n", f.schema, err)
			return ExitFailure
		}
	}
	applied, err := pgstore.ApplyMigrations(ctx, pool)
	st, serr := pgstore.MigrationStatus(ctx, pool)
	if serr != nil && err == nil {
		err = serr
	}
	if f.json {
		out := upJSON{Schema: st.Schema, Version: st.Current, Latest: st.Latest, Applied: []migrationJSON{}}
		for _, m := range applied {
			out.Applied = append(out.Applied, migrationJSON{Version: m.Version, Name: m.Name})
		}
		if err != nil {
			out.Error = err.Error()
		}
		printJSON(stdout, out)
	} else {
		for _, m := range applied {
			fmt.Fprintf(stdout, "applied %s\n", shortName(m.Name))
		}
		switch {
		case serr != nil:
		case len(applied) > 0:
			fmt.Fprintf(stdout, "schema %s is now at version %d\n", st.Schema, st.Current)
		case err == nil:
			fmt.Fprintf(stdout, "schema %s is up to date at version %d\n", st.Schema, st.Current)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "dagen migrate up: %v\n", err)
		return ExitFailure
	}
	return ExitOK
}

// statusJSON is the -json output of migrate status.
type statusJSON struct {
	Schema     string          `json:"schema"`
	Version    int             `json:"version"`
	Latest     int             `json:"latest"`
	State      string          `json:"state"` // up-to-date, pending or too-new
	Migrations []migrationJSON `json:"migrations"`
}

func migrateStatus(ctx context.Context, pool *pgxpool.Pool, f migrateFlags, stdout, stderr io.Writer) int {
	st, err := pgstore.MigrationStatus(ctx, pool)
	if err != nil {
		fmt.Fprintf(stderr, "dagen migrate status: %v\n", err)
		return ExitError
	}
	state, code := "up-to-date", ExitOK
	switch {
	case st.Current > st.Latest:
		state, code = "too-new", ExitFailure
	case len(st.Pending()) > 0:
		state, code = "pending", ExitFailure
	}
	if f.json {
		out := statusJSON{Schema: st.Schema, Version: st.Current, Latest: st.Latest, State: state, Migrations: []migrationJSON{}}
		for _, m := range st.Migrations {
			j := migrationJSON{Version: m.Version, Name: m.Name, Known: &m.Known, Applied: &m.Applied}
			if !m.AppliedAt.IsZero() {
				j.AppliedAt = &m.AppliedAt
			}
			out.Migrations = append(out.Migrations, j)
		}
		printJSON(stdout, out)
		return code
	}
	if st.Schema == "" {
		name := "of the search_path"
		if f.schema != "" {
			name = f.schema
		}
		fmt.Fprintf(stdout, "schema %s does not exist; this dagen knows version %d\n", name, st.Latest)
	} else {
		fmt.Fprintf(stdout, "schema %s is at version %d; this dagen knows version %d\n", st.Schema, st.Current, st.Latest)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, m := range st.Migrations {
		line := "\t" + shortName(m.Name) + "\tpending"
		if m.Applied {
			line = "\t" + shortName(m.Name) + "\tapplied\t" + m.AppliedAt.UTC().Format(time.RFC3339)
		}
		if !m.Known {
			line += "\t(unknown to this dagen)"
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush() // nowhere to report a failing stdout
	switch state {
	case "too-new":
		fmt.Fprintf(stdout, "the schema is newer than this dagen: upgrade dagen\n")
	case "pending":
		n := len(st.Pending())
		plural := "s"
		if n == 1 {
			plural = ""
		}
		up := "dagen migrate up"
		if f.schema != "" {
			up += " -schema " + f.schema
		}
		fmt.Fprintf(stdout, "%d migration%s pending: run %q\n", n, plural, up)
	}
	return code
}

// shortName is a migration's file name without .up.sql, as dagen prints
// it.
func shortName(name string) string {
	return strings.TrimSuffix(name, ".up.sql")
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // nowhere to report a failing stdout
}
