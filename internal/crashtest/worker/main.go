// Command worker is one worker process of the crash test: it runs the
// flow workflow on the Postgres store until SIGTERM, recording every step
// execution in the crash_exec table.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/internal/crashtest/flow"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

func main() {
	url := flag.String("url", "", "database URL, with search_path set to the test's schema")
	logURL := flag.String("log-url", "", "database URL of the crash_exec table, when not the store's (a failover test keeps its log out of the clusters it fails over)")
	id := flag.String("id", "", "worker id")
	lease := flag.Duration("lease", time.Second, "task lease and heartbeat TTL (0: the engine's defaults, with its heartbeat interval)")
	poll := flag.Duration("poll", 20*time.Millisecond, "poll interval (0: the engine's default)")
	notify := flag.Bool("notify", true, "use LISTEN/NOTIFY")
	followWrites := flag.Bool("reconnect-read-only", true, "drop connections whose server answers that it is read-only (pgstore.ReconnectWhenReadOnly)")
	reportLeader := flag.Bool("report-leader", false, "write whether this worker leads to crash_leader in the log database, every 50ms")
	var o options
	flag.IntVar(&o.concurrency, "concurrency", 8, "tasks the worker holds at once (engine.Config.Concurrency)")
	flag.DurationVar(&o.idlePoll, "idle-poll", 0, "longest wait between the polls of an idle worker (0: the engine's default)")
	flag.DurationVar(&o.heartbeat, "heartbeat", 0, "heartbeat interval (0: a fifth of -lease, or the engine's default when -lease is 0)")
	flag.StringVar(&o.triggerTx, "trigger-tx", "", "do not work: in one transaction, insert order `key` into crash_orders and start a run keyed by it (StartTx), print \"triggered\", and wait, uncommitted, to be killed")
	flag.BoolVar(&o.openPool, "open-pool", false, "open the pool with pgstore.OpenPool, as a deployment would: it asks the server whether a pooler sits between, and behind one runs pgx in cache_describe mode")
	flag.Parse()
	if err := run(*url, *logURL, *id, *lease, *poll, *notify, *reportLeader, *followWrites, o); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// options are the worker's flags that only some tests set.
type options struct {
	concurrency         int
	idlePoll, heartbeat time.Duration
	openPool            bool
	triggerTx           string // an order's key: see triggerInTx
}

func run(url, logURL, id string, lease, poll time.Duration, notify, reportLeader, followWrites bool, o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	var pool *pgxpool.Pool
	if o.openPool {
		// OpenPool also drops connections to a read-only server.
		pool, err = pgstore.OpenPool(ctx, pcfg)
	} else {
		if followWrites {
			pgstore.ReconnectWhenReadOnly(pcfg)
		}
		pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	}
	if err != nil {
		return err
	}
	defer pool.Close()
	logPool := pool
	if logURL != "" {
		if logPool, err = pgxpool.New(ctx, logURL); err != nil {
			return err
		}
		defer logPool.Close()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		return err
	}
	heartbeat := o.heartbeat
	if heartbeat == 0 {
		heartbeat = lease / 5
	}
	cfg := &engine.Config{
		WorkerID: id, Concurrency: o.concurrency, PollInterval: poll, IdlePollInterval: o.idlePoll,
		Lease: lease, HeartbeatInterval: heartbeat, Logger: log, DisableNotify: !notify,
	}
	e, err := engine.New(st, cfg)
	if err != nil {
		return err
	}
	wf, err := flow.NewJobWorkflow(e)
	if err != nil {
		return err
	}
	if o.triggerTx != "" {
		return triggerInTx(ctx, pool, wf, o.triggerTx)
	}
	rec := &recorder{pool: logPool, pid: os.Getpid(), worker: id}
	if err := e.Start(flow.WithRecorder(context.Background(), rec)); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "worker %s (pid %d) started\n", id, os.Getpid())
	if reportLeader {
		go report(ctx, logPool, id, e)
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return e.Stop(stopCtx)
}

// triggerInTx inserts order key into crash_orders and starts a run of
// the workflow keyed by it, in one transaction, then says so on stdout and
// waits with the transaction open until the process is killed (or
// stopped: then the transaction rolls back). The test kills it before
// the commit.
func triggerInTx(ctx context.Context, pool *pgxpool.Pool, wf *flow.JobWorkflow, key string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "INSERT INTO crash_orders (id) VALUES ($1)", key); err != nil {
		return err
	}
	run, err := wf.StartTx(ctx, tx, "tenant", flow.Job{N: 1}, engine.WithKey(key))
	if err != nil {
		return err
	}
	fmt.Printf("triggered %s\n", run.ID())
	<-ctx.Done()
	return nil
}

// report keeps this worker's row of crash_leader current: whether it
// leads, and when it last said so.
func report(ctx context.Context, pool *pgxpool.Pool, id string, e *engine.Engine) {
	for ctx.Err() == nil {
		_, err := pool.Exec(ctx, `
			INSERT INTO crash_leader (worker, leads, seen) VALUES ($1, $2, clock_timestamp())
			ON CONFLICT (worker) DO UPDATE SET leads = excluded.leads, seen = excluded.seen`, id, e.Leading())
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "worker: report leadership:", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// recorder writes step executions to crash_exec.
type recorder struct {
	pool   *pgxpool.Pool
	pid    int
	worker string
}

func (r *recorder) Record(ctx context.Context, step string, attempt int, phase string) error {
	return r.record(ctx, step, attempt, phase, nil)
}

// RecordEnd records the end of an execution with its output.
func (r *recorder) RecordEnd(ctx context.Context, step string, attempt int, output int) error {
	return r.record(ctx, step, attempt, "end", &output)
}

func (r *recorder) record(ctx context.Context, step string, attempt int, phase string, output *int) error {
	info, ok := dag.Info(ctx)
	if !ok {
		return errors.New("record: not in a step")
	}
	_, err := r.pool.Exec(context.WithoutCancel(ctx),
		`INSERT INTO crash_exec (run_id, step, attempt, phase, pid, worker, output) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		info.RunID.String(), step, attempt, phase, r.pid, r.worker, output)
	return err
}
