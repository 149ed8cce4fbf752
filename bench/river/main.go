// Command river is dagen's peer benchmark: it runs workload 1 of dagen's
// benchmark (single_step: N no-op jobs, pre-enqueued, then drained) with River,
// the Go job queue on Postgres, on the same machine and database as dagen's own
// workloads, so the two can be compared side by side.
//
// The run:
//
//  1. drops and recreates its own schema (-schema, default river_bench) and
//     runs River's migrations into it with rivermigrate;
//  2. inserts -jobs no-op jobs with InsertMany in batches of 5,000 (River's
//     own benchmark batch size) before any client is started;
//  3. starts a River client and measures from Start until the completion event
//     of the last job arrives on the client's event subscription;
//  4. stops the client and drops the schema (unless -keep).
//
// It prints one human-readable line and then one JSON line, e.g.
//
//	{"peer":"river","workload":"single_step","jobs":20000,"seconds":1.23,"jobs_per_sec":16260,"settings":"tuned","rss_mb":48.1}
//
// It lives in its own Go module so that River never enters dagen's root
// module graph.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// insertBatchSize is the number of jobs per InsertMany call. 5,000 is what
// River's own benchmark (cmd/river/riverbench) uses.
const insertBatchSize = 5_000

type options struct {
	databaseURL   string
	schema        string
	settings      string
	jobs          int
	durationLimit time.Duration
	keep          bool
	cpuProfile    string
	maxConns      int
	verbose       bool
}

// result is the machine-readable line; field names match dagen's own
// benchmark output so the two can be joined.
type result struct {
	Peer          string  `json:"peer"`
	Workload      string  `json:"workload"`
	Jobs          int     `json:"jobs"`
	Seconds       float64 `json:"seconds"`
	JobsPerSec    float64 `json:"jobs_per_sec"`
	Settings      string  `json:"settings"`
	RSSMB         float64 `json:"rss_mb"`
	RSSNowMB      float64 `json:"rss_now_mb"`
	InsertSeconds float64 `json:"insert_seconds"`
	MaxWorkers    int     `json:"max_workers"`
	PoolMaxConns  int32   `json:"pool_max_conns"`
	WorkerCalls   int64   `json:"worker_calls"`
	GoMaxProcs    int     `json:"gomaxprocs"`
	// StealPct is the share of the machine's CPU its host gave to others
	// while the jobs drained (steal in /proc/stat).
	StealPct float64 `json:"steal_pct"`
}

func main() {
	var o options
	flag.StringVar(&o.databaseURL, "database-url", envOr("DATABASE_URL", defaultDatabaseURL), "Postgres URL (default from $DATABASE_URL)")
	flag.StringVar(&o.schema, "schema", "river_bench", "schema to create River's tables in; dropped and recreated at start")
	flag.StringVar(&o.settings, "settings", "tuned", "client settings: tuned (as River's own benchmark) or default (River's defaults)")
	flag.IntVar(&o.jobs, "jobs", 20_000, "number of no-op jobs to insert and drain")
	flag.DurationVar(&o.durationLimit, "duration-limit", 5*time.Minute, "abort with an error if the whole run takes longer than this")
	flag.BoolVar(&o.keep, "keep", false, "keep the schema (and its jobs) at the end instead of dropping it")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the drain phase to this file")
	flag.IntVar(&o.maxConns, "max-conns", 0, "pgx pool MaxConns (0: pgxpool's default, as River's CLI uses)")
	flag.BoolVar(&o.verbose, "v", false, "log River's info messages to stderr")
	flag.Parse()

	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// clientConfig returns River's client config for a setting.
func clientConfig(settings string) (*river.Config, error) {
	switch settings {
	case "tuned":
		// Copied from River's own benchmark, cmd/river/riverbench
		// (river_bench.go, Benchmarker.Run), which is how River's authors
		// measure its peak throughput:
		//   - FetchCooldown 2ms (default 100ms): the producer may fetch again
		//     2ms after a fetch instead of 100ms, so freed worker slots are
		//     refilled almost at once instead of idling;
		//   - FetchPollInterval 20ms (default 1s): the fallback poll when no
		//     notification arrives;
		//   - MaxWorkers 2,000 on the default queue: their comment says ~1k
		//     was best in their tests, but the code uses 2,000, so we do too.
		// Everything else (pool, completer, retention) is left at River's
		// defaults, as riverbench does; River's CLI opens the pool with
		// pgxpool's defaults, and so do we unless -max-conns is given.
		return &river.Config{
			FetchCooldown:     2 * time.Millisecond,
			FetchPollInterval: 20 * time.Millisecond,
			Queues: map[string]river.QueueConfig{
				river.QueueDefault: {MaxWorkers: 2_000},
			},
		}, nil
	case "default":
		// River's defaults (FetchCooldown 100ms, FetchPollInterval 1s) with
		// MaxWorkers 100, the value River's README and docs examples use.
		return &river.Config{
			Queues: map[string]river.QueueConfig{
				river.QueueDefault: {MaxWorkers: 100},
			},
		}, nil
	default:
		return nil, fmt.Errorf("unknown -settings %q (want tuned or default)", settings)
	}
}

func run(ctx context.Context, o options) error {
	if o.jobs < 1 {
		return errors.New("-jobs must be at least 1")
	}
	cfg, err := clientConfig(o.settings)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeoutCause(ctx, o.durationLimit,
		fmt.Errorf("duration limit of %s exceeded", o.durationLimit))
	defer cancel()

	poolCfg, err := pgxpool.ParseConfig(o.databaseURL)
	if err != nil {
		return fmt.Errorf("parse database URL: %w", err)
	}
	poolCfg.ConnConfig.RuntimeParams["application_name"] = "dagen river bench"
	if o.maxConns > 0 {
		poolCfg.MaxConns = int32(o.maxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("open pool: %w", err)
	}
	defer pool.Close()

	if err := resetSchema(ctx, pool, o.schema); err != nil {
		return err
	}
	if !o.keep {
		defer func() {
			// Use a fresh context: the run's may be done or cancelled.
			dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer dcancel()
			if _, err := pool.Exec(dctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{o.schema}.Sanitize()+" CASCADE"); err != nil {
				fmt.Fprintln(os.Stderr, "river bench: drop schema:", err)
			}
		}()
	}

	logLevel := slog.LevelWarn
	if o.verbose {
		logLevel = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))

	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger, Schema: o.schema})
	if err != nil {
		return fmt.Errorf("new migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}

	var workerCalls atomic.Int64
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{calls: &workerCalls})
	cfg.Logger = logger
	cfg.Schema = o.schema
	cfg.Workers = workers
	maxWorkers := cfg.Queues[river.QueueDefault].MaxWorkers

	client, err := river.NewClient(driver, cfg)
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}

	// Pre-enqueue every job before the client starts.
	insertStart := time.Now()
	if err := insertJobs(ctx, client, o.jobs); err != nil {
		return err
	}
	insertSeconds := time.Since(insertStart).Seconds()

	// Count completions from the event subscription rather than in the worker,
	// as riverbench does: the event is sent after the completer has recorded
	// the job as completed in Postgres, so the clock stops when the work is
	// durable, not merely when Work returned. The channel holds every event so
	// none can be dropped.
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: o.jobs + 1000,
		Kinds: []river.EventKind{
			river.EventKindJobCompleted,
			river.EventKindJobFailed,
			river.EventKindJobCancelled,
		},
	})
	defer unsubscribe()

	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}

	start, cpuStart := time.Now(), readCPUTimes()
	if err := client.Start(ctx); err != nil {
		stopProfile()
		return fmt.Errorf("start client: %w", err)
	}
	var (
		lastDone  time.Time
		completed int
		failed    int
		waitErr   error
	)
	for completed+failed < o.jobs && waitErr == nil {
		select {
		case ev := <-events:
			if ev == nil {
				waitErr = errors.New("event subscription closed early")
				break
			}
			if ev.Kind == river.EventKindJobCompleted {
				completed++
			} else {
				failed++
			}
			lastDone = time.Now()
		case <-ctx.Done():
			waitErr = fmt.Errorf("%w after %d of %d jobs completed", context.Cause(ctx), completed, o.jobs)
		}
	}
	steal := readCPUTimes().stealPct(cpuStart)
	stopProfile()

	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	if err := client.Stop(stopCtx); err != nil && waitErr == nil {
		return fmt.Errorf("stop client: %w", err)
	}
	if waitErr != nil {
		return waitErr
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d jobs failed or were cancelled", failed, o.jobs)
	}

	seconds := lastDone.Sub(start).Seconds()
	hwm, rss := rssMB()
	res := result{
		Peer:          "river",
		Workload:      "single_step",
		Jobs:          o.jobs,
		Seconds:       round(seconds, 3),
		JobsPerSec:    round(float64(o.jobs)/seconds, 0),
		Settings:      o.settings,
		RSSMB:         round(hwm, 1),
		RSSNowMB:      round(rss, 1),
		InsertSeconds: round(insertSeconds, 3),
		MaxWorkers:    maxWorkers,
		PoolMaxConns:  pool.Config().MaxConns,
		WorkerCalls:   workerCalls.Load(),
		GoMaxProcs:    runtime.GOMAXPROCS(0),
		StealPct:      round(steal, 1),
	}
	fmt.Printf("river %s: %d no-op jobs drained in %.3fs = %.0f jobs/s (insert %.3fs, MaxWorkers %d, pool %d conns, peak RSS %.1f MB, CPU steal %.1f%%)\n",
		o.settings, o.jobs, seconds, res.JobsPerSec, insertSeconds, maxWorkers, res.PoolMaxConns, hwm, steal)
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}

// resetSchema drops the benchmark schema with everything in it and creates it
// empty again.
func resetSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema: %w", err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return nil
}

func insertJobs(ctx context.Context, client *river.Client[pgx.Tx], n int) error {
	batch := make([]river.InsertManyParams, 0, insertBatchSize)
	for i := 0; i < n; i += insertBatchSize {
		batch = batch[:0]
		for j := i; j < min(n, i+insertBatchSize); j++ {
			batch = append(batch, river.InsertManyParams{Args: noopArgs{Num: j}})
		}
		if _, err := client.InsertMany(ctx, batch); err != nil {
			return fmt.Errorf("insert jobs: %w", err)
		}
	}
	return nil
}

func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "river bench: cpu profile:", err)
		}
	}, nil
}

func round(v float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// cpuTimes are the machine's CPU times from the first line of /proc/stat,
// in ticks: all of them, and steal, the time a virtual machine's CPUs were
// ready to run but the host ran something else. (The same as in dagen's
// benchmark, which this module does not import.)
type cpuTimes struct{ total, steal uint64 }

func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return cpuTimes{}
	}
	var t cpuTimes
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		if i < 8 { // user nice system idle iowait irq softirq steal; guest is counted in user
			t.total += v
		}
		if i == 7 {
			t.steal = v
		}
	}
	return t
}

// stealPct is the share of the machine's CPU time stolen since start, in %.
func (t cpuTimes) stealPct(start cpuTimes) float64 {
	if t.total <= start.total {
		return 0
	}
	return 100 * float64(t.steal-start.steal) / float64(t.total-start.total)
}
