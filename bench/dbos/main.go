// Command dbos is dagen's peer benchmark for DBOS Transact Go: it runs the
// shapes of dagen's benchmark workloads (single_step, chain10, fan50 and
// fairness) with DBOS on the same machine and Postgres server as dagen's own,
// so the two can be read side by side.
//
// DBOS keeps its state in a system database; the benchmark gives it one of
// its own on the server (-database, default dagen_bench_dbos), created at the
// start if missing and dropped at the end unless -keep. Every workload starts
// on an empty DBOS schema and a fresh DBOS context.
//
// The throughput workloads enqueue all their workflows on a DBOS queue before
// Launch and time from Launch until the workflow status table holds the last
// workflow as SUCCESS. Each prints one human line and one JSON line, e.g.
//
//	{"peer":"dbos","workload":"single_step","runs":16000,"steps":16000,"seconds":5.8,"steps_per_sec":2759,...}
//
// It lives in its own Go module so that DBOS never enters dagen's root module
// graph.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// appName is DBOS's application name, which its connections also carry as
// application_name (the window finds DBOS's backends by it).
const appName = "dagen-bench-dbos"

// clientAppName is the application_name of the benchmark's own connections.
const clientAppName = "dagen dbos bench"

// dbosSchema is the schema DBOS creates its tables in (its default).
const dbosSchema = "dbos"

// allWorkloads are the workloads in the order they run.
var allWorkloads = []string{"single_step", "chain10", "fan50", "fairness"}

type options struct {
	databaseURL string
	database    string
	workloads   []string
	scale       float64

	runsSingle, runsChain, runsFan int
	fairARuns, fairBRuns           int

	queuePoll         time.Duration
	workerConcurrency int
	fairConcurrency   int
	fairPartition     int
	resultPoll        time.Duration
	maxConns          int
	enqueuers         int

	durationLimit time.Duration
	keep          bool
	verbose       bool
}

func main() {
	var o options
	var workloads string
	flag.StringVar(&o.databaseURL, "database-url", envOr("DATABASE_URL", defaultDatabaseURL), "Postgres server URL (default from $DATABASE_URL); DBOS's system database is made on the same server")
	flag.StringVar(&o.database, "database", "dagen_bench_dbos", "name of DBOS's system database, created if missing and dropped at the end unless -keep")
	flag.StringVar(&workloads, "workloads", strings.Join(allWorkloads, ","), "comma list of workloads: "+strings.Join(allWorkloads, ", "))
	flag.Float64Var(&o.scale, "scale", 1, "multiplies every run count (at least 1 run each)")
	flag.IntVar(&o.runsSingle, "runs-single", 16_000, "single_step: workflows of one no-op step")
	flag.IntVar(&o.runsChain, "runs-chain", 3_000, "chain10: workflows of 10 chained no-op steps")
	flag.IntVar(&o.runsFan, "runs-fan", 450, "fan50: workflows of 1 -> 50 -> 1 no-op steps")
	flag.IntVar(&o.fairARuns, "fair-a-runs", 100, "fairness: tenant A's runs idle, and again loaded")
	flag.IntVar(&o.fairBRuns, "fair-b-runs", 20_000, "fairness: tenant B's backlog")
	flag.DurationVar(&o.queuePoll, "queue-poll", 10*time.Millisecond, "the queue's base polling interval (DBOS's default: 1s)")
	flag.IntVar(&o.workerConcurrency, "worker-concurrency", 1_000, "the throughput queue's worker concurrency (workflows run at once by this process)")
	flag.IntVar(&o.fairConcurrency, "fair-concurrency", 64, "fairness: the queue's worker concurrency")
	flag.IntVar(&o.fairPartition, "fair-partition-concurrency", 0, "fairness: the partition worker concurrency (one tenant's workflows at once); 0: -fair-concurrency")
	flag.DurationVar(&o.resultPoll, "result-poll", time.Millisecond, "fairness: how often tenant A's GetResult polls the status table (DBOS's default: 1s)")
	flag.IntVar(&o.maxConns, "max-conns", 0, "DBOS's pool size, given as pool_max_conns in its URL (0: DBOS's default, 20)")
	flag.IntVar(&o.enqueuers, "enqueuers", 8, "goroutines enqueuing the backlog before Launch (not timed)")
	flag.DurationVar(&o.durationLimit, "duration-limit", 10*time.Minute, "abort with an error if the whole run takes longer than this")
	flag.BoolVar(&o.keep, "keep", false, "keep DBOS's system database at the end instead of dropping it")
	flag.BoolVar(&o.verbose, "v", false, "log DBOS's info messages to stderr")
	flag.Parse()

	o.workloads = strings.Split(workloads, ",")
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "dbos bench:", err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// bench holds what every workload shares.
type bench struct {
	o      options
	sysURL string        // DBOS's system database
	pool   *pgxpool.Pool // the benchmark's own connections to it
	logger *slog.Logger
}

func run(ctx context.Context, o options) (err error) {
	for _, w := range o.workloads {
		if !slices.Contains(allWorkloads, w) {
			return fmt.Errorf("unknown workload %q (want some of %s)", w, strings.Join(allWorkloads, ","))
		}
	}
	if o.scale <= 0 || o.workerConcurrency < 1 || o.fairConcurrency < 1 || o.enqueuers < 1 || o.queuePoll <= 0 {
		return errors.New("-scale, -queue-poll, -worker-concurrency, -fair-concurrency and -enqueuers must be positive")
	}
	if o.fairPartition <= 0 {
		o.fairPartition = o.fairConcurrency
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.durationLimit,
		fmt.Errorf("duration limit of %s exceeded", o.durationLimit))
	defer cancel()

	sysURL, err := systemDatabaseURL(o.databaseURL, o.database, o.maxConns)
	if err != nil {
		return err
	}
	if err := createDatabase(ctx, o.databaseURL, o.database); err != nil {
		return err
	}
	if !o.keep {
		defer func() {
			// A fresh context: the run's may be done.
			dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer dcancel()
			err = errors.Join(err, dropDatabase(dctx, o.databaseURL, o.database))
		}()
	}

	poolCfg, err := pgxpool.ParseConfig(sysURL)
	if err != nil {
		return fmt.Errorf("parse database URL: %w", err)
	}
	poolCfg.ConnConfig.RuntimeParams["application_name"] = clientAppName
	poolCfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("open pool: %w", err)
	}
	defer pool.Close()

	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	b := &bench{
		o:      o,
		sysURL: sysURL,
		pool:   pool,
		logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	for _, w := range allWorkloads {
		if !slices.Contains(o.workloads, w) {
			continue
		}
		var line string
		switch w {
		case "single_step":
			line, err = b.throughput(ctx, w, singleName, b.scaled(o.runsSingle), singleStep)
		case "chain10":
			line, err = b.throughput(ctx, w, chainName, b.scaled(o.runsChain), chainLen)
		case "fan50":
			line, err = b.throughput(ctx, w, fanName, b.scaled(o.runsFan), fanSteps)
		case "fairness":
			line, err = b.fairness(ctx)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", w, err)
		}
		fmt.Println(line)
	}
	return nil
}

// scaled returns n times -scale, at least 1.
func (b *bench) scaled(n int) int {
	return max(1, int(math.Round(float64(n)*b.o.scale)))
}

// systemDatabaseURL returns serverURL with its database replaced by name,
// and pool_max_conns set when maxConns is above zero.
func systemDatabaseURL(serverURL, name string, maxConns int) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("-database-url must be a postgres:// URL, got %q", serverURL)
	}
	u.Path = "/" + name
	if maxConns > 0 {
		q := u.Query()
		q.Set("pool_max_conns", strconv.Itoa(maxConns))
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// createDatabase creates the database name on the server of serverURL if
// it does not exist.
func createDatabase(ctx context.Context, serverURL, name string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return fmt.Errorf("connect to server: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look for database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// dropDatabase drops the database name, closing any connections left to it.
func dropDatabase(ctx context.Context, serverURL, name string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return fmt.Errorf("connect to server: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// resetSchema drops DBOS's schema so that the next context creates it
// anew, with empty tables.
func (b *bench) resetSchema(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{dbosSchema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", dbosSchema, err)
	}
	return nil
}
