// Command bench is dagen's benchmark: generated workflows (package flows)
// run by the engine on Postgres, in these workloads:
//
//   - single_step: 250,000 runs of one no-op step, enqueued up front, then
//     drained by a started engine: steps/s and CPU per step;
//   - single_capped: 20,000 runs of single_step's with concurrency=1 per=
//     over 1,000 keys (19,000 runs wait QUEUED, each admitted when the run
//     before it of its key completes): steps/s, against single_step's;
//   - single_limited: single_step's runs, whose step takes a token of a
//     rate limit that never binds (100 keys): steps/s, against
//     single_step's;
//   - single_flow: single_step's runs with priorities 0 to 9 over four
//     tenants of weights 1 to 4: steps/s and CPU per step, against
//     single_step's (the claim with priorities and weights);
//   - chain10: 20,000 runs of ten chained no-op steps: steps/s, CPU per
//     step and run latency (finished_at − created_at) p50/p99;
//   - chain20, chain10_child (only when named): 10,000 runs of twenty
//     chained no-op steps, in one run or in a run of ten one of whose
//     steps runs a child run of ten (//dag:child): steps/s and CPU per
//     step, what a child step costs;
//   - fan50: 4,000 runs of 1 → 50 → 1: steps/s and CPU per step;
//   - map100k: one run whose mapped step (each=) has 100,000 elements:
//     steps/s (every element a step) and the worker's peak RSS;
//   - map1k: 100 runs whose mapped step has 1,000 elements each: steps/s;
//   - trigger, trigger_key: 20,000 Trigger calls from 16 goroutines
//     (with an idempotency key each): runs/s;
//   - fairness: tenant A's run latency, one run at a time, on an idle
//     engine and then while tenant B's 20,000 runs drain, against a lone
//     commit's, and how many of B's steps started while A's waited;
//   - low_load: one two-step run every 10ms for 10s: the latency from A's
//     COMPLETED event to B's STARTED event, with notifications and with
//     polling alone;
//   - payload: one 7-step run whose steps each read a 20 MiB input: peak
//     RSS and what the Go heap allocated;
//   - soak (only when named): chain10 runs triggered at 70% of chain10's
//     peak for ten minutes, with Retention a minute: throughput, step
//     latency, dead tuples, table sizes and autovacuums every minute;
//   - backlog1m (only when named): 1,000,000 single-step runs queued over
//     10,000 tenants (Zipf-distributed), then drained: steps/s and CPU per
//     step against single_step's, and the claim's p50/p99 in the first,
//     middle and last tenth of the drain;
//   - fairness1m (only when named): fairness's tenant A behind
//     backlog1m's backlog (its 10,000 tenants play B), left undrained
//     once A's runs are done: A's latency against the commit probe's, and
//     how many of the backlog's steps started while one of A's waited;
//   - wide10k (only when named): one run of a layered workflow of 40
//     layers of 250 steps, written into a throwaway module: the time the
//     dagen generator and go build take on it, then its drain by the
//     program built (steps/s, against fan50's) and that program's peak
//     RSS (package layered).
//
// It uses the database at DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) in a schema
// of its own (-schema), created at start and dropped at the end, and
// prints a table and one JSON line per workload. With -river-json (and
// -dbos-json) it also prints dagen's throughput as a ratio of the peers'
// (bench/river, bench/dbos); -compare does only that, from saved outputs:
// make bench's rounds, as medians over them and ratios paired by round.
//
// See README.md for the targets and how to read the figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/dagenhq/dagen/runtime/store/shardstore"
)

// defaultDatabaseURL is the database used when DATABASE_URL is not set.
const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// allWorkloads lists the workloads in the order they run.
var allWorkloads = []string{"single_step", "single_capped", "single_limited", "single_flow", "chain10", "fan50", "map100k", "map1k", "trigger", "trigger_key", "fairness", "low_load", "payload", "soak", "chain20", "chain10_child", "backlog1m", "fairness1m", "wide10k"}

// shardedWorkloads are the workloads that run on a sharded store (-shards):
// those that drain enqueued runs and read only the run tables.
var shardedWorkloads = []string{"single_step", "chain10", "fan50", "chain20", "chain10_child", "map1k"}

// defaultWorkloads are those run without -workloads: all but the soak,
// which takes ten minutes, the child step's pair (chain20,
// chain10_child), measured when named, and the scale workloads
// (backlog1m, fairness1m, wide10k), which make bench runs once after its
// rounds.
var defaultWorkloads = allWorkloads[:len(allWorkloads)-6]

// options is what the command line sets.
type options struct {
	databaseURL string
	// schema is where dagen's tables go. When manageSchema is set the
	// schema is dropped and created at start and dropped at the end
	// (unless keep); otherwise it must exist and is left alone.
	schema       string
	manageSchema bool
	keep         bool

	workloads    []string
	scale        float64
	concurrency  int
	batchSize    int // engine BatchSize; 0: the engine's default (Concurrency)
	pollInterval time.Duration
	// notifyEvery is pgstore's Config.NotifyEvery: 0 its default, negative
	// a notification at every enqueue.
	notifyEvery time.Duration
	// noContinue is the engine's Config.DisableEagerContinue.
	noContinue bool
	maxConns   int
	timeout    time.Duration // per workload
	// planCacheMode, when set, is the sessions' plan_cache_mode: auto,
	// force_generic_plan or force_custom_plan.
	planCacheMode string
	// pooler says that databaseURL leads to a connection pooler
	// (PgBouncer) whose database entry sets the search_path to the schema
	// (connect_query): the startup packet then carries no search_path,
	// which PgBouncer refuses.
	pooler bool
	// sessionURL is pgstore's Config.SessionURL: a direct URL for LISTEN
	// when databaseURL leads to a pooler. The schema is added to it.
	sessionURL string

	cpuProfile string
	// metrics gives the engines an SDK MeterProvider with the Prometheus
	// exporter (runtime/metrics), scraped once a second, as a service
	// that Prometheus scrapes would.
	metrics bool
	// traces gives the engines an SDK TracerProvider that samples every
	// span and drops it, and triggers the runs under a span.
	traces     bool
	memProfile string
	jsonOut    string // also write the JSON lines here
	// riverJSON and dbosJSON are the peers' outputs, for the ratios:
	// comma-separated, one a -compare file.
	riverJSON string
	dbosJSON  string
	// compare names saved outputs of this command (comma-separated, one a
	// round) or make bench's output directory: only compare them.
	compare string

	// soakDuration is the soak's length at scale 1; soakRate its rate in
	// runs/s (0: soakFraction of chain10's measured peak).
	soakDuration time.Duration
	soakRate     float64
	// partitionPeriod is pgstore's Config.PartitionPeriod.
	partitionPeriod time.Duration

	// shards, when set, are the databases of a sharded store
	// (shardstore): the engines run on a store made of one pgstore a
	// shard, each in -schema of its database; databaseURL is not used.
	shards []shardstore.ShardURL
	// tenants spreads the throughput workloads' runs over this many
	// tenants, in turn (1: the one tenant "bench"), so that a sharded
	// store has runs on every shard and an unsharded one the same
	// tenants to compare with.
	tenants int
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err = run(ctx, o, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, errOut io.Writer) (options, error) {
	o := options{manageSchema: true}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(errOut)
	var workloads string
	fs.StringVar(&o.databaseURL, "database-url", envOr("DATABASE_URL", defaultDatabaseURL), "Postgres URL (default from $DATABASE_URL)")
	fs.StringVar(&o.schema, "schema", "dagen_bench", "schema for dagen's tables: dropped and created at start, dropped at the end")
	fs.BoolVar(&o.keep, "keep", false, "keep the schema at the end")
	fs.StringVar(&workloads, "workloads", strings.Join(defaultWorkloads, ","), "comma-separated workloads to run, of "+strings.Join(allWorkloads, ","))
	fs.Float64Var(&o.scale, "scale", 1, "multiplies every run count, and map100k's elements (0.05 for a quick check)")
	fs.IntVar(&o.concurrency, "concurrency", 64, "engine Concurrency: steps executing at once")
	fs.IntVar(&o.batchSize, "batch", 0, "engine BatchSize: tasks per claim and per completion (0: Concurrency)")
	fs.DurationVar(&o.pollInterval, "poll", 20*time.Millisecond, "engine PollInterval")
	fs.BoolVar(&o.noContinue, "no-eager-continue", false, "engine DisableEagerContinue: every step after a run's first goes through the ready queue")
	fs.DurationVar(&o.notifyEvery, "notify-every", 0, "pgstore NotifyEvery: how often an enqueue into a non-empty queue notifies (0: the store's default, 50ms; negative: every enqueue, as before)")
	fs.DurationVar(&o.partitionPeriod, "partition-period", 0, "pgstore PartitionPeriod: prune by dropping ranges of this width (0: the store's default; negative: half the retention)")
	fs.IntVar(&o.maxConns, "max-conns", 16, "connection pool size")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up on a workload after this long")
	fs.BoolVar(&o.pooler, "pooler", false, "-database-url leads to PgBouncer, whose database entry sets search_path to -schema (connect_query): send no search_path (see make bench-pgbouncer)")
	fs.StringVar(&o.sessionURL, "session-url", "", "pgstore SessionURL: a direct URL of the same database for LISTEN (with -pooler); -schema is added as its search_path")
	fs.StringVar(&o.planCacheMode, "plan-cache-mode", "", "set the sessions' plan_cache_mode (auto, force_generic_plan, force_custom_plan); empty: the server's")
	fs.BoolVar(&o.traces, "traces", false, "trace: an OpenTelemetry SDK TracerProvider that samples every span and drops it, runs triggered under a span")
	fs.BoolVar(&o.metrics, "metrics", false, "record metrics: an OpenTelemetry SDK MeterProvider with the Prometheus exporter, its handler scraped once a second")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a heap profile at the end of the run to this file (alloc_space: what the whole run allocated)")
	fs.StringVar(&o.jsonOut, "json-out", "", "also write the JSON lines to this file")
	fs.StringVar(&o.riverJSON, "river-json", "", "River's output (bench/river); print dagen/River ratios (with -compare FILES: one a round, comma-separated)")
	fs.StringVar(&o.dbosJSON, "dbos-json", "", "DBOS's output (bench/dbos); print dagen/DBOS ratios (as -river-json)")
	fs.StringVar(&o.compare, "compare", "", "run nothing: compare make bench's output directory, or saved outputs of bench (one a round, comma-separated) with -river-json and -dbos-json")
	fs.DurationVar(&o.soakDuration, "soak-duration", 10*time.Minute, "the soak's length, multiplied by -scale")
	fs.Float64Var(&o.soakRate, "soak-rate", 0, "the soak's rate in chain10 runs/s (0: 70% of chain10's peak, measured first)")
	var shards string
	fs.StringVar(&shards, "shards", "", "run on a sharded store over these databases, written name=url separated by spaces as DAGEN_SHARDS (-schema in each; -database-url is not used); only with the throughput workloads "+strings.Join(shardedWorkloads, ","))
	fs.IntVar(&o.tenants, "tenants", 1, "spread the throughput workloads' runs over this many tenants, in turn (with -shards, enough for every shard to have some)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.compare != "" {
		return o, nil
	}
	if shards != "" {
		var err error
		if o.shards, err = shardstore.ParseShards(shards); err != nil {
			return o, fmt.Errorf("-shards: %w", err)
		}
	}
	for w := range strings.SplitSeq(workloads, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		if !known(w) {
			return o, fmt.Errorf("unknown workload %q (want some of %s)", w, strings.Join(allWorkloads, ","))
		}
		o.workloads = append(o.workloads, w)
	}
	switch {
	case len(o.workloads) == 0:
		return o, errors.New("-workloads names no workload")
	case !(o.scale > 0) || o.scale > 1000:
		return o, fmt.Errorf("-scale %v: want a number in (0, 1000]", o.scale)
	case o.concurrency < 1:
		return o, fmt.Errorf("-concurrency %d: want at least 1", o.concurrency)
	case o.batchSize < 0:
		return o, fmt.Errorf("-batch %d: want 0 (the engine's default) or more", o.batchSize)
	case o.pollInterval <= 0:
		return o, fmt.Errorf("-poll %s: want a positive duration", o.pollInterval)
	case o.maxConns < 4:
		return o, fmt.Errorf("-max-conns %d: want at least 4", o.maxConns)
	case o.soakDuration <= 0:
		return o, fmt.Errorf("-soak-duration %s: want a positive duration", o.soakDuration)
	case o.soakRate < 0 || math.IsNaN(o.soakRate) || math.IsInf(o.soakRate, 0):
		return o, fmt.Errorf("-soak-rate %v: want 0 (70%% of the peak) or a positive rate", o.soakRate)
	case o.timeout <= 0:
		return o, fmt.Errorf("-timeout %s: want a positive duration", o.timeout)
	case o.planCacheMode != "" && o.planCacheMode != "auto" && o.planCacheMode != "force_generic_plan" && o.planCacheMode != "force_custom_plan":
		return o, fmt.Errorf("-plan-cache-mode %q: want auto, force_generic_plan or force_custom_plan", o.planCacheMode)
	case !validIdent(o.schema):
		return o, fmt.Errorf("-schema %q: want a lower-case identifier ([a-z_][a-z0-9_]*)", o.schema)
	case o.tenants < 1:
		return o, fmt.Errorf("-tenants %d: want at least 1", o.tenants)
	case len(o.shards) > 0 && (o.pooler || o.sessionURL != ""):
		return o, errors.New("-shards with -pooler or -session-url: the sharded benchmark connects to each shard directly; drop one")
	}
	if len(o.shards) > 0 {
		for _, w := range o.workloads {
			if !slices.Contains(shardedWorkloads, w) {
				return o, fmt.Errorf("-shards with workload %s: only the throughput workloads run sharded (%s)", w, strings.Join(shardedWorkloads, ","))
			}
		}
	}
	return o, nil
}

func known(w string) bool {
	for _, k := range allWorkloads {
		if k == w {
			return true
		}
	}
	return false
}

// validIdent reports whether s is a plain lower-case SQL identifier, so
// the schema name needs no quoting anywhere (search_path included).
func validIdent(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z'):
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// run runs the chosen workloads, or only the comparison, writing results
// to out and progress to log.
func run(ctx context.Context, o options, out, log io.Writer) error {
	if o.compare != "" {
		return compareFiles(o.compare, o.riverJSON, o.dbosJSON, out)
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintln(log, "bench: cpu profile:", err)
			}
		}()
	}
	results, err := runWorkloads(ctx, o, log)
	if o.memProfile != "" {
		if perr := writeHeapProfile(o.memProfile); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	if len(results) > 0 {
		printTable(out, results)
		if werr := writeJSON(out, o.jsonOut, results); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		return err
	}
	if o.riverJSON != "" || o.dbosJSON != "" {
		round := resultLines(results)
		peers, rerr := readLines(append(splitList(o.riverJSON), splitList(o.dbosJSON)...)...)
		if rerr != nil {
			return rerr
		}
		compare(out, benchSet{source: "this run", rounds: [][]line{append(round, peers...)}})
	}
	return nil
}

// writeHeapProfile writes the heap profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return nil
}
