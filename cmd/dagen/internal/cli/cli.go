package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dagenhq/dagen/gen"
	"github.com/dagenhq/dagen/internal/analysis"
)

// Exit codes.
const (
	ExitOK      = 0 // success; for diff: no file would change
	ExitFailure = 1 // diagnostics with errors; for diff: a file would change; for migrate: the schema is not up to date
	ExitError   = 2 // bad usage, or diff could not compare, or migrate could not connect
)

// commands are dagen's subcommands, generate first: it is the default.
var commands = []string{"generate", "check", "diff", "graph", "migrate", "runs", "schedules", "tenants", "ui"}

const usage = `dagen checks the //dag: directives of Go packages and writes dag_gen.go,
the typed wiring of their workflows. It also migrates the Postgres schema
the workflows run on.

Usage:

	dagen [generate] [flags] [packages]
	dagen check [flags] [packages]
	dagen check -db URL [-schema name] [-strict] [-json] [flags] [packages]
	dagen diff [flags] [packages]
	dagen graph [-format mermaid|dot] [-workflow name] [flags] [packages]
	dagen migrate up [-db URL] [-schema name] [-json]
	dagen migrate status [-db URL] [-schema name] [-json]
	dagen runs ls [-workflow w] [-tenant t] [-status s,…] [-since d] [-children all|only|none] [-limit n] [-after id] [-db URL] [-replica-db URL] [-schema name] [-json]
	dagen runs show ID [-graph] [-db URL] [-replica-db URL] [-schema name] [-json]
	dagen runs events ID [-db URL] [-replica-db URL] [-schema name] [-json]
	dagen runs cancel ID… | -filter [-workflow w] [-tenant t] [-since d] [-yes] [-db URL] [-replica-db URL] [-schema name] [-json]
	dagen runs retry ID [-mode failed|failed+downstream|from=STEP|all] [-operator name] [-db URL] [-replica-db URL] [-schema name] [-json]
	dagen runs signal ID STEP JSON [-db URL] [-replica-db URL] [-schema name] [-json]
	dagen schedules [ls|pause NAME|resume NAME|delete NAME] [-workflow w] [-tenant t] [-db URL] [-replica-db URL] [-schema name] [-json]
	dagen tenants [ls|weight TENANT N] [-db URL] [-replica-db URL] [-schema name] [-json]
	dagen ui [-addr 127.0.0.1:8080] [-read-only] [-metrics-top-tenants n] [-auth-file FILE] [-proxy-user-header NAME [-proxy-role-header NAME]]
	         [-tls-cert FILE -tls-key FILE] [-trust-forwarded-proto] [-session 12h] [-db URL] [-replica-db URL] [-schema name]

Commands:

	generate  check the packages and write dag_gen.go into each package that
	          has workflows (the default command); a dag_gen.go left in a
	          package with no directives any more is deleted
	check     check the packages and print diagnostics only; with -db,
	          also compare the task signatures of their workflows with the
	          unfinished tasks in that database, and print, per workflow,
	          the running runs this code could not finish and why (a step
	          renamed without name=, removed, a parent added or removed, a
	          type changed): run it before a deploy
	diff      print how dag_gen.go would change, as a unified diff, and
	          write nothing
	graph     print a workflow as a Mermaid flowchart or a Graphviz digraph
	migrate up
	          apply the schema migrations the database lacks, each in its
	          own transaction, and print each one applied
	migrate status
	          print the schema's version, the latest this dagen knows, and
	          each migration: applied (when) or pending
	runs ls   list runs, newest first, with counts per status; -after the
	          last id of a page for the next; -children only lists the
	          runs a parent run's step started (child runs), -children
	          none the others
	runs show print a run's steps: status, attempts, duration, error or
	          skip reason, what a queued step waits for (a rate limit's
	          next token, or the tasks ahead of it in the fair queue),
	          the child runs its steps started (latest attempt first)
	          and, for a child run, its parent run and step; -graph
	          prints a Mermaid flowchart coloured by status
	runs events
	          print a run's event log, oldest first
	runs cancel
	          cancel runs by id, or every running run the filter flags
	          select (-filter); asks before cancelling more than one unless
	          -yes
	runs retry
	          retry a finished run: -mode failed (the default: its failed
	          and cancelled steps), failed+downstream, from=STEP (that step
	          and everything after it; also replays a completed run) or
	          all; the steps not reset keep their outputs; -operator names
	          who retried in the event log (default $USER)
	runs signal
	          send a signal to a run's signal wait (//dag:signal), as
	          Send<Type> does: STEP is the wait's stored name, JSON its
	          payload; held when the run has not reached the wait yet
	schedules list schedules (-workflow, -tenant narrow the list), or
	          pause, resume or delete one by name; a resumed schedule
	          starts at its next slot
	tenants   list the tenants whose weight in the fair queue is not 1
	          (ls, the default), or give one a weight from 1 to 100
	          (weight TENANT N): under backlog, a tenant of weight 3 has
	          three tasks claimed for each one of a tenant of weight 1;
	          every worker follows it from its next claim
	ui        serve the web console (runs, a run's DAG and steps, cancel
	          and retry) on -addr until interrupted; -read-only refuses
	          actions. Off the loopback address it needs authentication:
	          $DAGEN_UI_OPERATOR_PASSWORD (user operator) and
	          $DAGEN_UI_PASSWORD (user viewer, read-only), -auth-file
	          (lines "name viewer|operator password"), or
	          -proxy-user-header behind a proxy that authenticates (its
	          -proxy-role-header says viewer or operator; default viewer);
	          -tls-cert/-tls-key serve HTTPS. Or mount runtime/console in
	          a service, behind the service's own authentication;
	          /metrics serves the backlog gauges to Prometheus (see
	          docs/operating.md)

Packages are go list patterns; the default is the current directory, which
is the package being generated when dagen runs from go generate.

Mistakes are printed to stderr as file:line:col: message, all of them at
once, sorted by position; warnings say "warning:" and do not stop
generation. A package with an error gets no new dag_gen.go; the other
packages still do.

Flags:

	-tags list    build tags to load the packages with. dag_gen.go gets
	              the //go:build constraint of the files its workflows are
	              declared in (types, steps, signals, predicates,
	              onfailure and schedule funcs), so it builds exactly when
	              they do; files with different constraints are joined
	              with &&, and files without one add nothing. Workflows
	              that should build with different tags belong in
	              different packages.
	-format f     graph: mermaid (default) or dot
	-workflow w   graph: the workflow to draw, by type or stored name
	              (needed when the packages hold more than one)
	-db URL       migrate: the database (default $DATABASE_URL; one of
	              them is required); check: the database to compare with
	-shards "NAME=URL ..."
	              migrate, runs, ui, check: the databases of a sharded
	              deployment in place of -db (default $DAGEN_SHARDS, but
	              for check): migrate and check run on every shard; runs
	              and ui show them as one system (docs/sharding.md)
	-shard-map M  migrate, runs, ui: the logical shards of each shard, as
	              0-511=a,512-1023=b (default $DAGEN_SHARD_MAP, else even)
	-strict       check -db: exit 1 when this code could not finish some
	              running runs
	-schema name  migrate, check -db: the schema, instead of the database's default
	              search_path; migrate up creates it if missing
	-json         migrate, check -db: print the result as JSON, for scripts
	-replica-db URL
	              runs, schedules, tenants, ui: a streaming replica of
	              -db to read from (default $DAGEN_REPLICA_URL; none:
	              read the primary); actions still go to the primary, and
	              the reads after one wait up to 2s for the replica to
	              replay it, else read the primary; listings and pages
	              show the replica's lag, or why they read the primary

Exit status:

	0  success; for diff: every dag_gen.go is up to date; for migrate
	   status: the schema is at the latest version
	1  generate, check, graph: the packages have errors (graph: or no such
	   workflow); check -db -strict: running runs this code could not
	   finish; diff: a dag_gen.go is stale, missing or left over;
	   migrate status: migrations are pending, or the schema is newer than
	   this dagen; migrate up: the schema is newer, or a migration failed
	   runs: an unknown run id, a failed read or cancel, or a declined
	   confirmation; schedules, tenants: an unknown schedule, or a failed
	   read or action
	2  bad usage; for diff: the packages have errors, so it cannot compare;
	   for migrate and check -db: no database URL, or it cannot connect

Examples:

	go get -tool github.com/dagenhq/dagen/cmd/dagen   # add dagen to a module

	//go:generate go tool dagen

	go generate ./...                    # regenerate every package
	go tool dagen ./...                  # the same, without go generate
	dagen check ./orders                 # CI: fail on graph errors
	dagen check -db "$DATABASE_URL" -strict ./...  # before a deploy: fail when runs would be stranded
	dagen diff ./...                     # CI: fail when dag_gen.go is stale
	dagen graph -workflow Order ./orders > order.mmd
	dagen graph -format dot ./orders | dot -Tsvg > order.svg
	DATABASE_URL=postgres://... dagen migrate up   # before starting workers
	dagen migrate status -db "$URL" -schema dagen  # CI: exit 1 when not migrated
	dagen runs ls -status failed -since 24h        # what failed since yesterday
	dagen runs show -graph 0192…                   # a run as a Mermaid flowchart
	dagen runs cancel -filter -tenant acme -yes    # cancel every running run of a tenant
	dagen tenants weight acme 3                    # acme gets 3 claims a turn of the fair queue
`

// Main runs dagen with args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "generate"
	if len(args) > 0 {
		switch first := args[0]; {
		case first == "migrate":
			return migrate(ctx, args[1:], stdout, stderr)
		case first == "runs":
			return runs(ctx, args[1:], os.Stdin, stdout, stderr)
		case first == "ui":
			return ui(ctx, args[1:], stdout, stderr)
		case first == "schedules" || first == "tenants":
			return runs(ctx, append([]string{first}, args[1:]...), os.Stdin, stdout, stderr)
		case slices.Contains(commands, first):
			cmd, args = first, args[1:]
		case first == "help" || first == "-h" || first == "-help" || first == "--help":
			fmt.Fprint(stdout, usage)
			return ExitOK
		case !strings.ContainsAny(first, "-./\\") && analysis.Suggest(first, commands) != "":
			// A bare word would be a standard library package; this
			// one looks like a mistyped command.
			fmt.Fprintf(stderr, "dagen: unknown command %q: did you mean %s?\nRun 'dagen --help' for usage.\n", first, analysis.Suggest(first, commands))
			return ExitError
		}
	}
	fs := flag.NewFlagSet("dagen "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	tags := fs.String("tags", "", "build tags")
	format := fs.String("format", "mermaid", "graph format: mermaid or dot")
	workflow := fs.String("workflow", "", "workflow to draw")
	var dbf checkDBFlags
	fs.StringVar(&dbf.db, "db", "", "database to compare with (check)")
	fs.StringVar(&dbf.shards, "shards", "", "the shards to compare with, name=URL separated by spaces (check)")
	fs.StringVar(&dbf.schema, "schema", "", "schema of the database (check -db)")
	fs.BoolVar(&dbf.strict, "strict", false, "exit 1 when runs would be stranded (check -db)")
	fs.BoolVar(&dbf.json, "json", false, "print JSON (check -db)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return ExitOK
		}
		fmt.Fprintf(stderr, "dagen: %v\nRun 'dagen --help' for usage.\n", err)
		return ExitError
	}
	cfg := gen.Config{}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags=" + *tags}
	}
	patterns := fs.Args()
	if cmd != "graph" && (*format != "mermaid" || *workflow != "") {
		fmt.Fprintf(stderr, "dagen: -format and -workflow are flags of dagen graph\n")
		return ExitError
	}
	if cmd != "check" && dbf != (checkDBFlags{}) {
		fmt.Fprintf(stderr, "dagen: -db, -schema, -strict and -json are flags of dagen check (and -db, -schema, -json of dagen migrate)\n")
		return ExitError
	}
	if dbf.db == "" && dbf.shards == "" && (dbf.schema != "" || dbf.strict || dbf.json) {
		fmt.Fprintf(stderr, "dagen check: -schema, -strict and -json compare with a database: add -db URL (or -db \"$DATABASE_URL\")\n")
		return ExitError
	}
	switch cmd {
	case "check":
		pkgs, diags := analysis.Run(ctx, cfg, patterns...)
		if code := report(stderr, diags); code != ExitOK || dbf.db == "" && dbf.shards == "" {
			return code
		}
		return checkDB(ctx, pkgs, dbf, stdout, stderr)
	case "diff":
		return diff(ctx, cfg, patterns, stdout, stderr)
	case "graph":
		return graph(ctx, cfg, patterns, *format, *workflow, stdout, stderr)
	}
	return generate(ctx, cfg, patterns, stderr)
}

// report prints diagnostics and returns ExitFailure when one is an error.
// File names under the working directory are printed relative to it, as
// the go command prints them: from go generate, that is the file's name.
func report(w io.Writer, diags []gen.Diagnostic) int {
	short := make([]gen.Diagnostic, len(diags))
	for i, d := range diags {
		d.Pos.Filename = relative(d.Pos.Filename)
		d.End.Filename = relative(d.End.Filename)
		d.Related = slices.Clone(d.Related)
		for j := range d.Related {
			d.Related[j].Pos.Filename = relative(d.Related[j].Pos.Filename)
		}
		short[i] = d
	}
	_ = analysis.Print(w, short) // nowhere to report a failing stderr
	if analysis.HasErrors(diags) {
		return ExitFailure
	}
	return ExitOK
}

func generate(ctx context.Context, cfg gen.Config, patterns []string, stderr io.Writer) int {
	files, diags := gen.Generate(ctx, cfg, patterns...)
	code := report(stderr, diags)
	deleted := map[string]bool{}
	for _, f := range files {
		deleted[f.Path] = f.Content == nil
	}
	wrote, err := gen.Write(files)
	for _, path := range wrote {
		verb := "wrote"
		if deleted[path] {
			verb = "deleted"
		}
		fmt.Fprintf(stderr, "dagen: %s %s\n", verb, relative(path))
	}
	if err != nil {
		fmt.Fprintf(stderr, "dagen: %v\n", err)
		return ExitFailure
	}
	return code
}

func diff(ctx context.Context, cfg gen.Config, patterns []string, stdout, stderr io.Writer) int {
	files, diags := gen.Generate(ctx, cfg, patterns...)
	if report(stderr, diags) != ExitOK {
		return ExitError
	}
	diffs, err := gen.Diff(files)
	if err != nil {
		fmt.Fprintf(stderr, "dagen: %v\n", err)
		return ExitError
	}
	for _, d := range diffs {
		fmt.Fprint(stdout, d.Text)
	}
	if len(diffs) > 0 {
		fmt.Fprintf(stderr, "dagen: %d generated file(s) out of date: run go generate\n", len(diffs))
		return ExitFailure
	}
	return ExitOK
}

func graph(ctx context.Context, cfg gen.Config, patterns []string, format, name string, stdout, stderr io.Writer) int {
	render := gen.Mermaid
	switch format {
	case "mermaid":
	case "dot":
		render = gen.DOT
	default:
		fmt.Fprintf(stderr, "dagen: unknown graph format %q: want mermaid or dot\n", format)
		return ExitError
	}
	pkgs, diags := analysis.Run(ctx, cfg, patterns...)
	if report(stderr, diags) != ExitOK {
		return ExitFailure
	}
	var all, match []*analysis.Workflow
	for _, p := range pkgs {
		for _, w := range p.Workflows {
			all = append(all, w)
			if name == "" || w.Name == name || w.TypeName == name {
				match = append(match, w)
			}
		}
	}
	names := make([]string, len(all))
	for i, w := range all {
		names[i] = w.TypeName
	}
	switch {
	case len(all) == 0:
		fmt.Fprintf(stderr, "dagen: no workflows in %s\n", strings.Join(orDot(patterns), " "))
		return ExitFailure
	case len(match) == 0:
		if s := analysis.Suggest(name, names); s != "" {
			fmt.Fprintf(stderr, "dagen: no workflow %q: did you mean %s?\n", name, s)
		} else {
			fmt.Fprintf(stderr, "dagen: no workflow %q (have %s)\n", name, strings.Join(names, ", "))
		}
		return ExitFailure
	case len(match) > 1:
		fmt.Fprintf(stderr, "dagen: several workflows (%s): choose one with -workflow\n", strings.Join(names, ", "))
		return ExitError
	}
	fmt.Fprint(stdout, render(match[0]))
	return ExitOK
}

func orDot(patterns []string) []string {
	if len(patterns) == 0 {
		return []string{"."}
	}
	return patterns
}

// relative shortens path for messages when it is under the working
// directory.
func relative(path string) string {
	if !filepath.IsAbs(path) {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return path
}
