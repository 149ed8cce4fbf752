package layered

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/bench/procstat"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// Config is what the drain program is told on its command line (see
// [Config.Args]): the database and the engine's settings, as the
// benchmark gives its own engines.
type Config struct {
	DatabaseURL string
	// Schema is where dagen's tables are, migrated and empty; it becomes
	// the connections' search_path unless Pooler says a pooler sets it.
	Schema     string
	Pooler     bool
	SessionURL string
	// AppName is the connections' application_name, by which the
	// benchmark finds its own backends.
	AppName       string
	PlanCacheMode string
	MaxConns      int

	Concurrency     int
	BatchSize       int
	Poll            time.Duration
	NoEagerContinue bool
	NotifyEvery     time.Duration
	PartitionPeriod time.Duration
	Tenant          string
}

// Args returns the command line that gives a drain program c.
func (c Config) Args() []string {
	return []string{
		"-database-url", c.DatabaseURL, "-schema", c.Schema, fmt.Sprintf("-pooler=%t", c.Pooler), "-session-url", c.SessionURL,
		"-app", c.AppName, "-plan-cache-mode", c.PlanCacheMode, fmt.Sprint("-max-conns=", c.MaxConns),
		fmt.Sprint("-concurrency=", c.Concurrency), fmt.Sprint("-batch=", c.BatchSize), fmt.Sprint("-poll=", c.Poll),
		fmt.Sprintf("-no-eager-continue=%t", c.NoEagerContinue), fmt.Sprint("-notify-every=", c.NotifyEvery),
		fmt.Sprint("-partition-period=", c.PartitionPeriod), "-tenant", c.Tenant,
	}
}

// parseConfig reads a Config from the command line Args wrote.
func parseConfig(args []string, errOut io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&c.DatabaseURL, "database-url", "", "Postgres URL")
	fs.StringVar(&c.Schema, "schema", "", "schema of dagen's tables, migrated")
	fs.BoolVar(&c.Pooler, "pooler", false, "the URL leads to a pooler that sets search_path")
	fs.StringVar(&c.SessionURL, "session-url", "", "pgstore SessionURL")
	fs.StringVar(&c.AppName, "app", "dagen bench", "application_name of the connections")
	fs.StringVar(&c.PlanCacheMode, "plan-cache-mode", "", "the sessions' plan_cache_mode; empty: the server's")
	fs.IntVar(&c.MaxConns, "max-conns", 16, "pool size")
	fs.IntVar(&c.Concurrency, "concurrency", 64, "engine Concurrency")
	fs.IntVar(&c.BatchSize, "batch", 0, "engine BatchSize (0: Concurrency)")
	fs.DurationVar(&c.Poll, "poll", 20*time.Millisecond, "engine PollInterval")
	fs.BoolVar(&c.NoEagerContinue, "no-eager-continue", false, "engine DisableEagerContinue")
	fs.DurationVar(&c.NotifyEvery, "notify-every", 0, "pgstore NotifyEvery")
	fs.DurationVar(&c.PartitionPeriod, "partition-period", 0, "pgstore PartitionPeriod")
	fs.StringVar(&c.Tenant, "tenant", "bench", "the run's tenant")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.DatabaseURL == "" || c.Schema == "" {
		return c, errors.New("-database-url and -schema are required")
	}
	return c, nil
}

// Report is what a drain measured, printed as one JSON line: the trigger
// of the one run, then the drain from the engine's start to the run's
// end, and what the drain cost this process (the worker) and Postgres
// (see package procstat).
type Report struct {
	Status         string  `json:"status"`
	Steps          int     `json:"steps"`
	TriggerSeconds float64 `json:"trigger_seconds"`
	Seconds        float64 `json:"seconds"`
	// TriggerRSSMB is the peak RSS up to the trigger's end; RSSMB the
	// peak from the engine's start (the trigger's garbage returned to the
	// system first), RSSNowMB the RSS at the end.
	TriggerRSSMB float64 `json:"trigger_rss_mb"`
	RSSMB        float64 `json:"rss_mb"`
	RSSNowMB     float64 `json:"rss_now_mb"`
	procstat.Usage
}

// Main is the drain program's main: it parses args (see [Config.Args]),
// drains one run of def with input and prints its [Report] as a JSON line
// on standard output. It returns the exit code.
func Main(args []string, def *engine.Definition, input any) int {
	c, err := parseConfig(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "drain:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := Drain(ctx, c, def, input)
	if err != nil {
		fmt.Fprintln(os.Stderr, "drain:", err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, "drain: write the report:", err)
		return 1
	}
	return 0
}

// Drain triggers one run of def on an engine not yet started, then starts
// the engine and waits for the run to finish, measuring the drain. The
// run must complete.
func Drain(ctx context.Context, c Config, def *engine.Definition, input any) (rep Report, err error) {
	pcfg, err := pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		return rep, fmt.Errorf("parse database URL: %w", err)
	}
	if !c.Pooler {
		pcfg.ConnConfig.RuntimeParams["search_path"] = c.Schema
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = c.AppName
	if c.PlanCacheMode != "" {
		pcfg.ConnConfig.RuntimeParams["plan_cache_mode"] = c.PlanCacheMode
	}
	pcfg.MaxConns = int32(c.MaxConns)
	pool, err := pgstore.OpenPool(ctx, pcfg)
	if err != nil {
		return rep, fmt.Errorf("%w (is the database at -database-url up?)", err)
	}
	defer pool.Close()
	st, err := pgstore.New(ctx, pool, &pgstore.Config{NotifyEvery: c.NotifyEvery, PartitionPeriod: c.PartitionPeriod, SessionURL: c.SessionURL})
	if err != nil {
		return rep, fmt.Errorf("new store (is schema %s migrated?): %w", c.Schema, err)
	}
	defer st.Close()
	e, err := engine.New(st, &engine.Config{
		Concurrency: c.Concurrency, BatchSize: c.BatchSize, PollInterval: c.Poll,
		DisableEagerContinue: c.NoEagerContinue,
		Logger:               slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return rep, fmt.Errorf("new engine: %w", err)
	}
	if err := e.Register(def); err != nil {
		return rep, fmt.Errorf("register workflow %s: %w", def.Name, err)
	}

	t0 := time.Now()
	id, err := e.Trigger(ctx, def.Name, c.Tenant, input)
	if err != nil {
		return rep, fmt.Errorf("trigger a run of %s: %w", def.Name, err)
	}
	rep.TriggerSeconds = time.Since(t0).Seconds()
	rep.TriggerRSSMB, _ = procstat.RSSMB()
	// The drain's peak is the engine's own: what the trigger allocated
	// (the run's tasks, encoded) goes back to the system first.
	runtime.GC()
	debug.FreeOSMemory()
	procstat.ResetPeakRSS()

	win := procstat.Start(ctx, procstat.Backends(pool, c.AppName))
	start := time.Now()
	if err := e.Start(ctx); err != nil {
		return rep, fmt.Errorf("start engine: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if serr := e.Stop(sctx); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop engine: %w", serr))
		}
	}()
	res, err := e.Wait(ctx, id)
	rep.Seconds = time.Since(start).Seconds()
	rep.Usage = win.Stop(ctx)
	rep.RSSMB, rep.RSSNowMB = procstat.RSSMB()
	if err != nil {
		return rep, fmt.Errorf("wait for run %s: %w", id, err)
	}
	rep.Status = string(res.Status)
	rep.Steps = len(res.Tasks)
	if res.Status != store.RunCompleted {
		return rep, fmt.Errorf("run %s ended %s, not COMPLETED", id, res.Status)
	}
	return rep, nil
}
