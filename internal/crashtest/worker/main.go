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
	id := flag.String("id", "", "worker id")
	lease := flag.Duration("lease", time.Second, "task lease and heartbeat TTL")
	notify := flag.Bool("notify", true, "use LISTEN/NOTIFY")
	flag.Parse()
	if err := run(*url, *id, *lease, *notify); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(url, id string, lease time.Duration, notify bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		return err
	}
	e, err := engine.New(st, &engine.Config{
		WorkerID: id, Concurrency: 8, PollInterval: 20 * time.Millisecond,
		Lease: lease, HeartbeatInterval: lease / 5, Logger: log, DisableNotify: !notify,
	})
	if err != nil {
		return err
	}
	if _, err := flow.NewJobWorkflow(e); err != nil {
		return err
	}
	rec := &recorder{pool: pool, pid: os.Getpid(), worker: id}
	if err := e.Start(flow.WithRecorder(context.Background(), rec)); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "worker %s (pid %d) started\n", id, os.Getpid())
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return e.Stop(stopCtx)
}

// recorder writes step executions to crash_exec.
type recorder struct {
	pool   *pgxpool.Pool
	pid    int
	worker string
}

func (r *recorder) Record(ctx context.Context, step string, attempt int, phase string) error {
	info, ok := dag.Info(ctx)
	if !ok {
		return errors.New("record: not in a step")
	}
	_, err := r.pool.Exec(context.WithoutCancel(ctx),
		`INSERT INTO crash_exec (run_id, step, attempt, phase, pid, worker) VALUES ($1, $2, $3, $4, $5, $6)`,
		info.RunID.String(), step, attempt, phase, r.pid, r.worker)
	return err
}
