package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/bench/figures"
	"github.com/dagenhq/dagen/bench/procstat"
)

// queueName is the DBOS queue every workload enqueues on.
const queueName = "bench"

// Fairness's tenants (partition keys) and the unmeasured runs of tenant A
// that warm the connections up before its idle runs.
const (
	tenantA      = "A"
	tenantB      = "B"
	fairWarmRuns = 10
)

// throughputResult is a throughput workload's JSON line. The field names
// are read by a comparison program in another module: keep them.
type throughputResult struct {
	Peer         string  `json:"peer"`
	Workload     string  `json:"workload"`
	Runs         int     `json:"runs"`
	Steps        int     `json:"steps"`
	Seconds      float64 `json:"seconds"`
	StepsPerSec  float64 `json:"steps_per_sec"`
	WorkerCPUSec float64 `json:"worker_cpu_s"`
	// The part of WorkerCPUSec the Go runtime spent collecting garbage.
	WorkerGCCPUSec float64 `json:"worker_gc_cpu_s"`
	PGCPUSec       float64 `json:"pg_cpu_s"`
	CPUUsPerStep   float64 `json:"cpu_us_per_step"`
	RSSMB          float64 `json:"rss_mb"`
	StealPct       float64 `json:"steal_pct"`
	Settings       string  `json:"settings"`
}

// fairnessResult is fairness's JSON line: tenant A's latencies in ms, on an
// idle system and while tenant B's backlog drains. Runs are A's (idle and
// loaded); the field names are read by another program: keep them.
type fairnessResult struct {
	Peer      string  `json:"peer"`
	Workload  string  `json:"workload"`
	Runs      int     `json:"runs"`
	BRuns     int     `json:"b_runs"`
	IdleP50Ms float64 `json:"idle_p50_ms"`
	IdleP99Ms float64 `json:"idle_p99_ms"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	Settings  string  `json:"settings"`
}

// newContext makes a DBOS context on the system database with every
// benchmark workflow registered and the bench queue registered with opts
// (the queue's configuration lives in DBOS's queues table).
func (b *bench) newContext(ctx context.Context, opts ...dbos.QueueOption) (dbos.Context, dbos.Queue, error) {
	dctx, err := dbos.NewContext(ctx, dbos.Config{
		AppName:            appName,
		DatabaseURL:        b.sysURL,
		DatabaseSchema:     dbosSchema,
		Logger:             b.logger,
		ApplicationVersion: "bench",
	})
	if err != nil {
		return nil, nil, fmt.Errorf("new DBOS context: %w", err)
	}
	registerWorkflows(dctx)
	q, err := dbos.RegisterQueue(dctx, queueName, opts...)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("register queue: %w", err), shutdown(dctx))
	}
	return dctx, q, nil
}

// shutdown stops a DBOS context.
func shutdown(dctx dbos.Context) error {
	if err := dbos.Shutdown(dctx, 30*time.Second); err != nil {
		return fmt.Errorf("shut DBOS down: %w", err)
	}
	return nil
}

// throughput runs one throughput workload: runs workflows of the
// registered workflow name (steps each) enqueued before Launch, timed from
// Launch until the last one is SUCCESS in the status table. It returns the
// human line and the JSON line.
func (b *bench) throughput(ctx context.Context, workload, name string, runs, steps int) (_ string, err error) {
	if err := b.resetSchema(ctx); err != nil {
		return "", err
	}
	resetProbe()
	dctx, _, err := b.newContext(ctx,
		dbos.WithWorkerConcurrency(b.o.workerConcurrency),
		dbos.WithQueueBasePollingInterval(b.o.queuePoll))
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, shutdown(dctx)) }()

	enqStart := time.Now()
	if err := b.enqueue(dctx, name, runs, ""); err != nil {
		return "", err
	}
	enqSec := time.Since(enqStart).Seconds()

	procstat.ResetPeakRSS()
	win := procstat.Start(ctx, procstat.Backends(b.pool, appName))
	start := time.Now()
	if err := dbos.Launch(dctx); err != nil {
		win.Stop(ctx)
		return "", fmt.Errorf("launch: %w", err)
	}
	end, err := b.waitSucceeded(ctx, runs, probe.done.Load)
	u := win.Stop(ctx)
	peakRSS, _ := procstat.RSSMB()
	if err != nil {
		return "", err
	}
	total := runs * steps
	if err := b.check(ctx, runs, total); err != nil {
		return "", err
	}
	if calls := probe.stepCalls.Load(); calls != int64(total) {
		return "", fmt.Errorf("step functions ran %d times, want %d", calls, total)
	}

	sec := end.Sub(start).Seconds()
	res := throughputResult{
		Peer:           "dbos",
		Workload:       workload,
		Runs:           runs,
		Steps:          total,
		Seconds:        figures.Round(sec, 3),
		StepsPerSec:    figures.Round(float64(total)/sec, 0),
		WorkerCPUSec:   figures.Round(u.WorkerCPU, 2),
		WorkerGCCPUSec: figures.Round(u.WorkerGCCPU, 2),
		PGCPUSec:       figures.Round(u.PGCPU, 2),
		CPUUsPerStep:   figures.Round((u.WorkerCPU+u.PGCPU)/float64(total)*1e6, 1),
		RSSMB:          figures.Round(peakRSS, 1),
		StealPct:       figures.Round(u.StealPct, 1),
		Settings:       b.settings(),
	}
	line, err := json.Marshal(res)
	if err != nil {
		return "", err
	}
	human := fmt.Sprintf("dbos %s: %d runs, %d steps in %.3fs = %.0f steps/s; CPU s worker %.2f (GC %.2f), postgres %.2f (DBOS's backends %.2f) = %.1f us/step; peak RSS %.1f MB; steal %.1f%%; enqueue before Launch %.3fs (not timed); %s",
		workload, runs, total, sec, res.StepsPerSec, u.WorkerCPU, u.WorkerGCCPU, u.PGCPU, u.PGOwnCPU, res.CPUUsPerStep, res.RSSMB, u.StealPct, enqSec, res.Settings)
	return human + "\n" + string(line), nil
}

// settings describes the throughput queue's configuration.
func (b *bench) settings() string {
	s := fmt.Sprintf("queue-poll=%s worker-concurrency=%d", b.o.queuePoll, b.o.workerConcurrency)
	if b.o.maxConns > 0 {
		s += fmt.Sprintf(" max-conns=%d", b.o.maxConns)
	}
	return s
}

// fairness measures tenant A's latency, one single-step workflow at a
// time on a partitioned queue, first on an idle system and then while
// tenant B's backlog drains.
func (b *bench) fairness(ctx context.Context) (_ string, err error) {
	nA, nB := b.scaled(b.o.fairARuns), b.scaled(b.o.fairBRuns)
	if err := b.resetSchema(ctx); err != nil {
		return "", err
	}
	resetProbe()
	// A partition limit partitions the queue (WithPartitionQueue is
	// deprecated in v1.8): the worker concurrency caps the whole queue, and
	// each poll dequeues the partitions in a random order.
	opts := []dbos.QueueOption{
		dbos.WithWorkerConcurrency(b.o.fairConcurrency),
		dbos.WithPartitionWorkerConcurrency(b.o.fairPartition),
		dbos.WithQueueBasePollingInterval(b.o.queuePoll),
	}

	// Idle: one context, launched, with nothing but A's runs.
	dctx, q, err := b.newContext(ctx, opts...)
	if err != nil {
		return "", err
	}
	if err := dbos.Launch(dctx); err != nil {
		return "", errors.Join(fmt.Errorf("launch: %w", err), shutdown(dctx))
	}
	next := 0 // A's inputs are -1-next, all distinct
	runA := func(dctx dbos.Context, q dbos.Queue) (time.Duration, error) {
		in := -1 - next
		next++
		t0 := time.Now()
		h, err := dbos.RunWorkflow(dctx, singleWorkflow, in, dbos.WithQueue(q), dbos.WithQueuePartitionKey(tenantA))
		if err != nil {
			return 0, fmt.Errorf("tenant A run %d: %w", next, err)
		}
		out, err := h.GetResult(dbos.WithHandlePollingInterval(b.o.resultPoll))
		if err != nil {
			return 0, fmt.Errorf("tenant A run %d: %w", next, err)
		}
		if out != in {
			return 0, fmt.Errorf("tenant A run %d returned %d, want %d", next, out, in)
		}
		return time.Since(t0), nil
	}
	idle := make([]float64, 0, nA)
	for i := range fairWarmRuns + nA {
		d, err := runA(dctx, q)
		if err != nil {
			return "", errors.Join(err, shutdown(dctx))
		}
		if i >= fairWarmRuns {
			idle = append(idle, figures.Ms(d))
		}
	}
	if err := shutdown(dctx); err != nil {
		return "", err
	}

	// Loaded: B's whole backlog is enqueued before a new context launches
	// (a launched one would drain much of it during the enqueue), then A
	// runs one at a time again while B drains.
	dctx, q, err = b.newContext(ctx, opts...)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, shutdown(dctx)) }()
	enqStart := time.Now()
	if err := b.enqueue(dctx, singleName, nB, tenantB); err != nil {
		return "", err
	}
	enqSec := time.Since(enqStart).Seconds()
	start := time.Now()
	if err := dbos.Launch(dctx); err != nil {
		return "", fmt.Errorf("launch: %w", err)
	}
	loaded := make([]float64, 0, nA)
	underLoad := 0
	for range nA {
		d, err := runA(dctx, q)
		if err != nil {
			return "", err
		}
		loaded = append(loaded, figures.Ms(d))
		if probe.done.Load() < int64(nB) {
			underLoad++
		}
	}
	aSec := time.Since(start).Seconds()
	all := fairWarmRuns + 2*nA + nB
	end, err := b.waitSucceeded(ctx, all, func() int64 { return probe.done.Load() + probe.aDone.Load() })
	if err != nil {
		return "", err
	}
	if err := b.check(ctx, all, all); err != nil {
		return "", err
	}

	res := fairnessResult{
		Peer:     "dbos",
		Workload: "fairness",
		Runs:     2 * nA,
		BRuns:    nB,
		Settings: fmt.Sprintf("queue-poll=%s worker-concurrency=%d partition-worker-concurrency=%d result-poll=%s",
			b.o.queuePoll, b.o.fairConcurrency, b.o.fairPartition, b.o.resultPoll),
	}
	if b.o.maxConns > 0 {
		res.Settings += fmt.Sprintf(" max-conns=%d", b.o.maxConns)
	}
	res.IdleP50Ms, res.IdleP99Ms = figures.Percentiles(idle)
	res.P50Ms, res.P99Ms = figures.Percentiles(loaded)
	line, err := json.Marshal(res)
	if err != nil {
		return "", err
	}
	human := fmt.Sprintf("dbos fairness: tenant A p50/p99 %.2f/%.2f ms idle, %.2f/%.2f ms while B's %d runs drain (%d of A's %d loaded runs finished with B's backlog left; A's took %.3fs, B drained in %.3fs from Launch; B's enqueue %.3fs not timed); %s",
		res.IdleP50Ms, res.IdleP99Ms, res.P50Ms, res.P99Ms, nB, underLoad, nA, aSec, end.Sub(start).Seconds(), enqSec, res.Settings)
	return human + "\n" + string(line), nil
}

// enqueue enqueues n workflows of the registered name on the bench queue
// (under partition, if not empty) from -enqueuers goroutines, with inputs
// 0 to n-1.
func (b *bench) enqueue(dctx dbos.Context, name string, n int, partition string) error {
	var opts []dbos.EnqueueOption
	if partition != "" {
		opts = append(opts, dbos.WithEnqueueQueuePartitionKey(partition))
	}
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		firstEr error
	)
	for range min(b.o.enqueuers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if _, err := dbos.Enqueue[int](dctx, queueName, name, i, opts...); err != nil {
					errOnce.Do(func() { firstEr = fmt.Errorf("enqueue %s %d: %w", name, i, err) })
					next.Store(int64(n)) // stop the others
					return
				}
			}
		})
	}
	wg.Wait()
	return firstEr
}

// waitSucceeded waits until n workflows are SUCCESS in DBOS's status
// table and returns when the count that saw them all was taken. The table
// is counted every 2 ms once done (the workflows' own count) reaches n,
// and every second before, so that a failed workflow ends the wait.
func (b *bench) waitSucceeded(ctx context.Context, n int, done func() int64) (time.Time, error) {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	var lastCount time.Time
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for %d workflows (%d past their last step): %w", n, done(), context.Cause(ctx))
		case <-t.C:
		}
		if done() < int64(n) && time.Since(lastCount) < time.Second {
			continue
		}
		// The count's snapshot is taken after this instant, so it is a
		// bound on when the last workflow was recorded.
		lastCount = time.Now()
		succeeded, failed, err := b.countFinished(ctx)
		if err != nil {
			return time.Time{}, err
		}
		if failed > 0 {
			return time.Time{}, fmt.Errorf("%d workflows ended in failure", failed)
		}
		if succeeded >= n {
			return lastCount, nil
		}
	}
}

// finishedQuery counts the workflows that succeeded and those that ended
// otherwise (ERROR, CANCELLED, dead-lettered).
var finishedQuery = fmt.Sprintf(`SELECT count(*) FILTER (WHERE status = 'SUCCESS'),
	count(*) FILTER (WHERE status NOT IN ('SUCCESS', 'ENQUEUED', 'PENDING', 'DELAYED'))
	FROM %s.workflow_status`, pgx.Identifier{dbosSchema}.Sanitize())

func (b *bench) countFinished(ctx context.Context) (succeeded, failed int, err error) {
	if err := b.pool.QueryRow(ctx, finishedQuery).Scan(&succeeded, &failed); err != nil {
		return 0, 0, fmt.Errorf("count finished workflows: %w", err)
	}
	return succeeded, failed, nil
}

// check verifies that DBOS holds exactly runs workflows, all SUCCESS, and
// steps checkpointed step outcomes.
func (b *bench) check(ctx context.Context, runs, steps int) error {
	schema := pgx.Identifier{dbosSchema}.Sanitize()
	var all, succeeded, recorded int
	if err := b.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'SUCCESS') FROM `+schema+`.workflow_status`).Scan(&all, &succeeded); err != nil {
		return fmt.Errorf("count workflows: %w", err)
	}
	if all != runs || succeeded != runs {
		return fmt.Errorf("%d workflows, %d of them SUCCESS, want %d and %d", all, succeeded, runs, runs)
	}
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.operation_outputs`).Scan(&recorded); err != nil {
		return fmt.Errorf("count steps: %w", err)
	}
	if recorded != steps {
		return fmt.Errorf("%d steps recorded, want %d", recorded, steps)
	}
	return nil
}
