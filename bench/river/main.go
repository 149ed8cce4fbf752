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
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/dagenhq/dagen/bench/figures"
	"github.com/dagenhq/dagen/bench/procstat"
)

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// insertBatchSize is the number of jobs per InsertMany call. 5,000 is what
// River's own benchmark (cmd/river/riverbench) uses.
const insertBatchSize = 5_000

type options struct {
	databaseURL   string
	schema        string
	settings      string
	workload      string
	jobs          int // 0: the workload's default times scale
	aJobs         int // fairness: tenant A's jobs per phase; 0: the default times scale
	scale         float64
	durationLimit time.Duration
	keep          bool
	cpuProfile    string
	maxConns      int
	verbose       bool
}

// Default sizes, multiplied by -scale. single_step drains 200,000 jobs, at
// least 5 s at this machine's 30k jobs/s; fairness has 20,000 B jobs behind
// A's 100 a phase, as dagen's fairness workload.
const (
	singleJobs = 200_000
	fairBJobs  = 20_000
	fairAJobs  = 100
	// fairWarmJobs are A's unmeasured first jobs, so both phases run on
	// warm connections (as in dagen's fairness).
	fairWarmJobs = 10
)

// appName is the application_name of the benchmark's connections, by
// which its backends' CPU is told apart.
const appName = "dagen river bench"

// result is the machine-readable line; field names match dagen's own
// benchmark output so the two can be joined.
type result struct {
	Peer     string `json:"peer"`
	Workload string `json:"workload"`
	// Jobs is how many jobs ran in the timed window (fairness: B's and
	// A's loaded ones); Steps the same, under dagen's name (a job is a
	// step).
	Jobs        int     `json:"jobs"`
	Steps       int     `json:"steps"`
	Seconds     float64 `json:"seconds"`
	JobsPerSec  float64 `json:"jobs_per_sec,omitempty"`
	StepsPerSec float64 `json:"steps_per_sec,omitempty"`
	Settings    string  `json:"settings"`
	RSSMB       float64 `json:"rss_mb"`
	RSSNowMB    float64 `json:"rss_now_mb"`
	// CPU over the timed window in core-seconds: this process, every
	// process named postgres on the machine (other users included), and
	// this benchmark's own backends; and both first ones per job, in µs.
	WorkerCPUSec float64 `json:"worker_cpu_s"`
	// The part of WorkerCPUSec the Go runtime spent collecting garbage.
	WorkerGCCPUSec float64 `json:"worker_gc_cpu_s"`
	PGCPUSec       float64 `json:"pg_cpu_s"`
	PGOwnCPUSec    float64 `json:"pg_own_cpu_s"`
	CPUUsPerStep   float64 `json:"cpu_us_per_step"`
	InsertSeconds  float64 `json:"insert_seconds"`
	MaxWorkers     int     `json:"max_workers"`
	PoolMaxConns   int32   `json:"pool_max_conns"`
	WorkerCalls    int64   `json:"worker_calls"`
	GoMaxProcs     int     `json:"gomaxprocs"`
	// StealPct is the share of the machine's CPU its host gave to others
	// while the jobs drained (steal in /proc/stat).
	StealPct float64 `json:"steal_pct"`
	// The server's work over the drain, per job, as dagen's benchmark
	// counts it a step: shared buffers read or found (pg_stat_database,
	// every database) and WAL records written (pg_stat_wal). Unlike CPU
	// time they do not move with what else the host runs.
	PGBuffersPerStep    float64 `json:"pg_buffers_per_step,omitempty"`
	PGWALRecordsPerStep float64 `json:"pg_wal_records_per_step,omitempty"`

	// fairness: A's jobs a phase (Runs: all of A's and B's), B's backlog,
	// A's latency (insert to completion event) in ms idle and behind B's
	// backlog, and how many of A's loaded jobs completed while B still had
	// jobs left.
	Runs      int     `json:"runs,omitempty"`
	ARuns     int     `json:"a_runs,omitempty"`
	BRuns     int     `json:"b_runs,omitempty"`
	IdleP50Ms float64 `json:"idle_p50_ms,omitempty"`
	IdleP99Ms float64 `json:"idle_p99_ms,omitempty"`
	P50Ms     float64 `json:"p50_ms,omitempty"`
	P99Ms     float64 `json:"p99_ms,omitempty"`
	UnderLoad int     `json:"a_runs_under_load,omitempty"`
	// A's loaded jobs from the insert's start to Work's start: the wait
	// for a worker, without the wait for the completer (which, under 100
	// jobs to complete, stores completions every 250ms).
	AStartP50Ms float64 `json:"a_start_p50_ms,omitempty"`
	AStartP99Ms float64 `json:"a_start_p99_ms,omitempty"`
}

func main() {
	var o options
	flag.StringVar(&o.databaseURL, "database-url", envOr("DATABASE_URL", defaultDatabaseURL), "Postgres URL (default from $DATABASE_URL)")
	flag.StringVar(&o.schema, "schema", "river_bench", "schema to create River's tables in; dropped and recreated at start")
	flag.StringVar(&o.settings, "settings", "tuned", "client settings: tuned (as River's own benchmark) or default (River's defaults)")
	flag.StringVar(&o.workload, "workload", "single_step", "single_step (drain pre-enqueued jobs) or fairness (A's jobs one at a time behind B's backlog)")
	flag.IntVar(&o.jobs, "jobs", 0, "single_step: jobs to insert and drain; fairness: B's backlog (0: 200,000 or 20,000, times -scale)")
	flag.IntVar(&o.aJobs, "a-jobs", 0, "fairness: A's jobs in each phase, idle and loaded (0: 100 times -scale)")
	flag.Float64Var(&o.scale, "scale", 1, "multiplies the default job counts (not an explicit -jobs or -a-jobs)")
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

// scaled returns n times scale, at least 1.
func scaled(n int, scale float64) int {
	return max(1, int(math.Round(float64(n)*scale)))
}

// bench is what both workloads share.
type bench struct {
	o       options
	pool    *pgxpool.Pool
	driver  *riverpgxv5.Driver
	logger  *slog.Logger
	workers *river.Workers
	calls   *atomic.Int64
	started *sync.Map // tenant A's jobs: job id -> when Work began
}

// newClient makes a client with the settings, over the benchmark's schema.
func (b *bench) newClient() (*river.Client[pgx.Tx], int, error) {
	cfg, err := clientConfig(b.o.settings)
	if err != nil {
		return nil, 0, err
	}
	cfg.Logger = b.logger
	cfg.Schema = b.o.schema
	cfg.Workers = b.workers
	client, err := river.NewClient(b.driver, cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("new client: %w", err)
	}
	return client, cfg.Queues[river.QueueDefault].MaxWorkers, nil
}

func run(ctx context.Context, o options) error {
	if !(o.scale > 0) || o.scale > 1000 {
		return fmt.Errorf("-scale %v: want a number in (0, 1000]", o.scale)
	}
	if o.jobs < 0 || o.aJobs < 0 {
		return errors.New("-jobs and -a-jobs must not be negative")
	}
	switch o.workload {
	case "single_step":
		if o.jobs == 0 {
			o.jobs = scaled(singleJobs, o.scale)
		}
	case "fairness":
		if o.jobs == 0 {
			o.jobs = scaled(fairBJobs, o.scale)
		}
		if o.aJobs == 0 {
			o.aJobs = scaled(fairAJobs, o.scale)
		}
	default:
		return fmt.Errorf("unknown -workload %q (want single_step or fairness)", o.workload)
	}
	if _, err := clientConfig(o.settings); err != nil {
		return err
	}

	ctx, cancel := context.WithTimeoutCause(ctx, o.durationLimit,
		fmt.Errorf("duration limit of %s exceeded", o.durationLimit))
	defer cancel()

	poolCfg, err := pgxpool.ParseConfig(o.databaseURL)
	if err != nil {
		return fmt.Errorf("parse database URL: %w", err)
	}
	poolCfg.ConnConfig.RuntimeParams["application_name"] = appName
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

	b := &bench{o: o, pool: pool, driver: driver, logger: logger, workers: river.NewWorkers(), calls: &atomic.Int64{}, started: &sync.Map{}}
	river.AddWorker(b.workers, &noopWorker{calls: b.calls})
	river.AddWorker(b.workers, &tenantAWorker{calls: b.calls, started: b.started})

	var res result
	if o.workload == "fairness" {
		res, err = b.fairness(ctx)
	} else {
		res, err = b.drain(ctx)
	}
	if err != nil {
		return err
	}
	line, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	fmt.Println(string(line))
	return nil
}

// fill sets the figures every workload reports: CPU, steal, RSS, settings.
func (b *bench) fill(res *result, u procstat.Usage, maxWorkers int) {
	hwm, rss := procstat.RSSMB()
	res.Peer = "river"
	res.Settings = b.o.settings
	res.Steps = res.Jobs
	res.WorkerCPUSec = figures.Round(u.WorkerCPU, 2)
	res.WorkerGCCPUSec = figures.Round(u.WorkerGCCPU, 2)
	res.PGCPUSec = figures.Round(u.PGCPU, 2)
	res.PGOwnCPUSec = figures.Round(u.PGOwnCPU, 2)
	if res.Jobs > 0 {
		res.CPUUsPerStep = figures.Round(1e6*(u.WorkerCPU+u.PGCPU)/float64(res.Jobs), 1)
	}
	res.StealPct = figures.Round(u.StealPct, 1)
	res.RSSMB = figures.Round(hwm, 1)
	res.RSSNowMB = figures.Round(rss, 1)
	res.MaxWorkers = maxWorkers
	res.PoolMaxConns = b.pool.Config().MaxConns
	res.WorkerCalls = b.calls.Load()
	res.GoMaxProcs = runtime.GOMAXPROCS(0)
}

// drain is the single_step workload: jobs inserted up front, then drained
// by a started client, timed from Start to the last completion event.
func (b *bench) drain(ctx context.Context) (result, error) {
	o := b.o
	client, maxWorkers, err := b.newClient()
	if err != nil {
		return result{}, err
	}

	// Pre-enqueue every job before the client starts.
	insertStart := time.Now()
	if err := insertJobs(ctx, client, o.jobs); err != nil {
		return result{}, err
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
		return result{}, err
	}

	workBefore, workErr := readWork(ctx, b.pool)
	win := procstat.Start(ctx, procstat.Backends(b.pool, appName))
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		stopProfile()
		return result{}, fmt.Errorf("start client: %w", err)
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
	u := win.Stop(ctx)
	workAfter, err := readWork(ctx, b.pool)
	workErr = errors.Join(workErr, err)
	stopProfile()

	if err := stopClient(client); err != nil && waitErr == nil {
		return result{}, err
	}
	if waitErr != nil {
		return result{}, waitErr
	}
	if failed > 0 {
		return result{}, fmt.Errorf("%d of %d jobs failed or were cancelled", failed, o.jobs)
	}

	seconds := lastDone.Sub(start).Seconds()
	res := result{
		Workload:      "single_step",
		Jobs:          o.jobs,
		Seconds:       figures.Round(seconds, 3),
		JobsPerSec:    figures.Round(float64(o.jobs)/seconds, 0),
		InsertSeconds: figures.Round(insertSeconds, 3),
	}
	res.StepsPerSec = res.JobsPerSec
	b.fill(&res, u, maxWorkers)
	work := "pg buffers and WAL records a job not read: " + fmt.Sprint(workErr)
	if workErr == nil {
		res.PGBuffersPerStep = figures.Round(float64(workAfter.buffers-workBefore.buffers)/float64(o.jobs), 1)
		res.PGWALRecordsPerStep = figures.Round(float64(workAfter.walRecords-workBefore.walRecords)/float64(o.jobs), 2)
		work = fmt.Sprintf("pg buffers %.1f and WAL records %.2f a job", res.PGBuffersPerStep, res.PGWALRecordsPerStep)
	}
	fmt.Printf("river %s: %d no-op jobs drained in %.3fs = %.0f jobs/s (insert %.3fs, MaxWorkers %d, pool %d conns, peak RSS %.1f MB, CPU steal %.1f%%); CPU worker %.2fs (GC %.2fs) + postgres %.2fs = %.1f µs a job; %s\n",
		o.settings, o.jobs, seconds, res.JobsPerSec, insertSeconds, maxWorkers, res.PoolMaxConns, res.RSSMB, res.StealPct, res.WorkerCPUSec, res.WorkerGCCPUSec, res.PGCPUSec, res.CPUUsPerStep, work)
	return res, nil
}

func stopClient(client *river.Client[pgx.Tx]) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Stop(ctx); err != nil {
		return fmt.Errorf("stop client: %w", err)
	}
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

// serverWork is the server's cumulative work: shared buffers read or
// found over every database, and WAL records written.
type serverWork struct{ buffers, walRecords int64 }

// readWork reads the server's counters, as dagen's benchmark does around
// each workload.
func readWork(ctx context.Context, pool *pgxpool.Pool) (serverWork, error) {
	var w serverWork
	err := pool.QueryRow(ctx, `SELECT (SELECT sum(blks_hit + blks_read) FROM pg_stat_database)::bigint,
		wal_records FROM pg_stat_wal`).Scan(&w.buffers, &w.walRecords)
	if err != nil {
		return w, fmt.Errorf("read pg_stat_database and pg_stat_wal: %w", err)
	}
	return w, nil
}
