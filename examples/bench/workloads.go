package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/dagenhq/dagen/bench/figures"
	"github.com/dagenhq/dagen/bench/procstat"
	"github.com/dagenhq/dagen/examples/bench/flows"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
	"github.com/dagenhq/dagen/runtime/store/shardstore"
)

// Base run counts, multiplied by -scale. The throughput workloads
// (single_step, chain10, fan50) drain 200,000 steps or more each, so each
// runs for at least 5 s at the 30-40k steps/s this 2-core machine manages
// with -concurrency 2048 -batch 512 (single_step, the fastest, 250,000: 5 s
// at 50k): a second's hiccup moves the figure by a fifth at most.
const (
	singleRuns = 250_000
	// single_capped: cappedRuns runs, concurrency=1 per key, this many
	// runs a key (1,000 keys at scale 1).
	cappedRuns       = 20_000
	cappedRunsPerKey = 20
	chainRuns        = 20_000
	chain20Runs      = 10_000
	fanRuns          = 4_000
	fairBRuns        = 20_000
	fairARuns        = 100
	fairWarmRuns     = 10    // unmeasured runs of A first, so both phases run on warm connections
	lowLoadRuns      = 1_000 // one every lowLoadEvery: 10s
	lowLoadEvery     = 10 * time.Millisecond
	// map100k is one run of mapBigElements elements (-scale multiplies
	// the elements: there is one run); map1k is mapSmallRuns runs of
	// mapSmallElements elements (-scale multiplies the runs).
	mapBigElements   = 100_000
	mapSmallRuns     = 100
	mapSmallElements = 1_000

	chainSteps = 10
	blobSteps  = 7
	// payloadBytes is the size of the payload workload's run input.
	payloadBytes = 20 << 20
	fanSteps     = 52 // Root, F01..F50, Join
	mapSteps     = 2  // Items and Collect, besides one step per element

	triggerChunk = 1_000 // runs per TriggerMany
)

// Tenants.
const (
	benchTenant = "bench"
	tenantA     = "tenant-a"
	tenantB     = "tenant-b"
)

// Stored workflow names, as generated.
var (
	singleName  = flows.SingleDefinition().Name
	cappedName  = flows.CappedDefinition().Name
	limitedName = flows.LimitedDefinition().Name
	chainName   = flows.ChainDefinition().Name
	// chain20 and chain10_child: twenty steps a run, in one run, or in a
	// run of ten and its child run of ten.
	chain20Name     = flows.Chain20Definition().Name
	chainParentName = flows.ChainParentDefinition().Name
	fanName         = flows.FanDefinition().Name
	mapName         = flows.MapDefinition().Name
	blobName        = flows.BlobDefinition().Name
)

// Result is one workload's figures: one JSON line. Fields that do not
// apply to a workload are left out.
type Result struct {
	Peer     string `json:"peer"` // always "dagen"
	Workload string `json:"workload"`
	// Runs is how many runs the workload made; Completed how many of them
	// ended COMPLETED (anything else is an error).
	Runs      int `json:"runs"`
	Completed int `json:"completed"`
	// Steps executed in the timed window, and the window. A mapped step
	// counts once per element.
	Steps       int     `json:"steps,omitempty"`
	Seconds     float64 `json:"seconds"`
	StepsPerSec float64 `json:"steps_per_sec,omitempty"`
	// Elements is how many elements each run's mapped step has (map100k,
	// map1k).
	Elements int `json:"elements,omitempty"`
	// Keys is how many concurrency keys single_capped spreads its runs over.
	Keys int `json:"keys,omitempty"`
	// Tenants is how many tenants the runs were spread over (-tenants),
	// or backlog1m drew its runs' tenants from; 0 for one.
	Tenants int `json:"tenants,omitempty"`
	// backlog1m: the claim's p50 and p99 in ms (claims that took tasks) in
	// the first, middle and last tenth of the drain.
	ClaimStartP50Ms float64 `json:"claim_start_p50_ms,omitempty"`
	ClaimStartP99Ms float64 `json:"claim_start_p99_ms,omitempty"`
	ClaimMidP50Ms   float64 `json:"claim_mid_p50_ms,omitempty"`
	ClaimMidP99Ms   float64 `json:"claim_mid_p99_ms,omitempty"`
	ClaimEndP50Ms   float64 `json:"claim_end_p50_ms,omitempty"`
	ClaimEndP99Ms   float64 `json:"claim_end_p99_ms,omitempty"`
	// wide10k: the layered workflow's layers and steps a layer, the
	// seconds the dagen generator took on its source and go build took on
	// a program holding the generated package, and dag_gen.go's size.
	// Its Seconds is the drain, and its resources (RSS, worker CPU) are
	// the drain program's: the worker is that process.
	Layers       int     `json:"layers,omitempty"`
	Width        int     `json:"width,omitempty"`
	GenerateSec  float64 `json:"generate_seconds,omitempty"`
	BuildSec     float64 `json:"build_seconds,omitempty"`
	GeneratedKiB int     `json:"generated_kib,omitempty"`
	// TriggerSeconds is how long the throughput workloads took to trigger
	// their runs, before the engine started (not in Seconds).
	TriggerSeconds float64 `json:"trigger_seconds,omitempty"`
	// CPUUsPerStep is the CPU the timed window cost a step, in µs: this
	// process's and every postgres process's (WorkerCPUSec + PGCPUSec) over
	// Steps.
	CPUUsPerStep float64 `json:"cpu_us_per_step,omitempty"`

	// Latency percentiles in milliseconds: run latency for chain10, tenant
	// A's latency under load for fairness, step-to-step latency with
	// notifications for low_load.
	P50Ms float64 `json:"p50_ms,omitempty"`
	P99Ms float64 `json:"p99_ms,omitempty"`
	// fairness: tenant A on an idle engine, the ratio of the p99s, and how
	// many of A's loaded runs finished while B still had runs left.
	IdleP50Ms float64 `json:"idle_p50_ms,omitempty"`
	IdleP99Ms float64 `json:"idle_p99_ms,omitempty"`
	P99Ratio  float64 `json:"p99_ratio,omitempty"`
	UnderLoad int     `json:"a_runs_under_load,omitempty"`
	// Tenant A's loaded runs as the caller sees them: the trigger call
	// (Start) and the wait from its return to the result (Wait).
	TriggerP50Ms float64 `json:"a_trigger_p50_ms,omitempty"`
	TriggerP99Ms float64 `json:"a_trigger_p99_ms,omitempty"`
	WaitP50Ms    float64 `json:"a_wait_p50_ms,omitempty"`
	WaitP99Ms    float64 `json:"a_wait_p99_ms,omitempty"`
	// From tenant A's loaded runs' event log: QUEUED to STARTED (waiting
	// for a claim), STARTED to COMPLETED (executing and storing the result).
	QueuedP50Ms  float64 `json:"a_queued_p50_ms,omitempty"`
	QueuedP99Ms  float64 `json:"a_queued_p99_ms,omitempty"`
	ClaimedP50Ms float64 `json:"a_claimed_p50_ms,omitempty"`
	ClaimedP99Ms float64 `json:"a_claimed_p99_ms,omitempty"`
	BRuns        int     `json:"b_runs,omitempty"`
	// BDoneRuns is, in fairness1m (whose backlog is not drained), how
	// many of the backlog's runs finished while A's loaded runs ran.
	BDoneRuns int `json:"b_runs_done,omitempty"`
	// The floor under the fairness ratio: before each of A's runs, one
	// single-row UPDATE commits on its own (one round trip), idle and
	// under B's load. Every run of A commits twice.
	CommitIdleP50Ms float64 `json:"commit_idle_p50_ms,omitempty"`
	CommitIdleP99Ms float64 `json:"commit_idle_p99_ms,omitempty"`
	CommitP50Ms     float64 `json:"commit_p50_ms,omitempty"`
	CommitP99Ms     float64 `json:"commit_p99_ms,omitempty"`
	CommitP99Ratio  float64 `json:"commit_p99_ratio,omitempty"`
	// AOverCommitP99 is A's loaded p99 over the commit probe's loaded p99:
	// how many lone commits A's run costs at the tail, under the same load.
	AOverCommitP99 float64 `json:"a_over_commit_p99,omitempty"`
	// BStepsMax and BStepsP99: for each of A's loaded runs, how many of
	// B's steps started (STARTED in the event log) after A's step was
	// QUEUED and before it STARTED; the most and the p99 over A's runs. A
	// fair queue keeps this within one claim batch (BatchSize).
	BStepsMax int `json:"b_steps_before_a_max,omitempty"`
	BStepsP99 int `json:"b_steps_before_a_p99,omitempty"`
	// Seconds from the start of B's enqueue to its end, and to the end of
	// A's loaded runs; b_drain_seconds is to the end of B's drain.
	BEnqueueSec float64 `json:"b_enqueue_seconds,omitempty"`
	ALoadedSec  float64 `json:"a_loaded_seconds,omitempty"`
	BDrainedSec float64 `json:"b_drain_seconds,omitempty"`
	// low_load: step-to-step latency with polling alone (DisableNotify),
	// and how many 10ms ticks were missed because a trigger took longer.
	PollP50Ms   float64 `json:"poll_p50_ms,omitempty"`
	PollP99Ms   float64 `json:"poll_p99_ms,omitempty"`
	MissedTicks int     `json:"missed_ticks,omitempty"`

	// Resources over the timed window: this process's peak and current RSS
	// (VmHWM, reset at the start of the workload where the kernel allows,
	// and VmRSS), its CPU, and the CPU of every process named postgres on
	// this machine, other users of the server included (in core-seconds and
	// in % of the window's wall time).
	RSSMB float64 `json:"rss_mb"`
	// TriggerRSSMB is the peak RSS of a throughput workload's trigger
	// phase, which builds every run before the engine starts; rss_mb is
	// then measured from the engine's start, the heap the triggers left
	// returned to the system first.
	TriggerRSSMB float64 `json:"trigger_rss_mb,omitempty"`
	// AllocMB is what the payload workload allocated on the Go heap, in
	// all (runtime.MemStats.TotalAlloc), from encoding its input to its
	// run's end.
	AllocMB      float64 `json:"alloc_mb,omitempty"`
	RSSNowMB     float64 `json:"rss_now_mb"`
	WorkerCPUSec float64 `json:"worker_cpu_s"`
	WorkerCPUPct float64 `json:"worker_cpu_pct"`
	// The part of WorkerCPUSec the Go runtime spent collecting garbage
	// (see procstat.Usage).
	WorkerGCCPUSec float64 `json:"worker_gc_cpu_s"`
	PGCPUSec       float64 `json:"pg_cpu_s"`
	PGCPUPct       float64 `json:"pg_cpu_pct"`
	// The part of the Postgres CPU used by the backends of this
	// benchmark's own connections (found by application_name).
	PGOwnCPUSec float64 `json:"pg_own_cpu_s"`
	PGOwnCPUPct float64 `json:"pg_own_cpu_pct"`
	// PGBuffers, PGWALRecords and PGWALBytes are the server's work over
	// the window (see pgWork): shared buffers read or found, WAL records
	// and bytes written; with PGBuffersPerStep and PGWALRecordsPerStep,
	// the figures to compare two versions by where CPU time is noisy.
	PGBuffers           int64   `json:"pg_buffers,omitempty"`
	PGWALRecords        int64   `json:"pg_wal_records,omitempty"`
	PGWALBytes          int64   `json:"pg_wal_bytes,omitempty"`
	PGBuffersPerStep    float64 `json:"pg_buffers_per_step,omitempty"`
	PGWALRecordsPerStep float64 `json:"pg_wal_records_per_step,omitempty"`
	// StealPct is the share of the machine's CPU time its host gave to
	// others over the window (steal in /proc/stat). Past a few %, the
	// figures say more about the host than about dagen.
	StealPct float64 `json:"steal_pct"`
	// NotifyWaitPct is the share of the active backends, sampled every
	// 20ms over the window, that waited for the lock NOTIFY takes at
	// commit.
	NotifyWaitPct float64 `json:"notify_wait_pct"`

	// Soak is the soak workload's report.
	Soak *SoakReport `json:"soak,omitempty"`

	Concurrency int `json:"concurrency"`
	// BatchSize is the engine's BatchSize: tasks per claim.
	BatchSize  int     `json:"batch_size"`
	PollMs     float64 `json:"poll_ms"`
	MaxConns   int     `json:"pool_max_conns"`
	GoMaxProcs int     `json:"gomaxprocs"`
	// Shards is how many shard databases the store had (-shards), 0
	// unsharded.
	Shards int `json:"shards,omitempty"`
}

// bench holds what every workload shares: the options and the pools, kept
// open throughout so Postgres backends live as long as the benchmark.
type bench struct {
	o options
	// pools has one pool a shard's database (-shards), or the one pool
	// on -database-url; pool is the first, for what reads one database
	// (the commit probe, the wait sampler, the soak's statistics).
	pools []*pgxpool.Pool
	pool  *pgxpool.Pool
	log   io.Writer
	slog  *slog.Logger
	// mp is the engines' MeterProvider with -metrics, nil without.
	mp metric.MeterProvider
	// tp is the engines' TracerProvider with -traces, nil without.
	tp trace.TracerProvider
	// limited is set while single_limited runs: its engines register the
	// rate-limited workflow.
	limited bool
	// claims, while backlog1m runs, times its engine's claims.
	claims *claimTimes
}

// runWorkloads sets the schema up, runs the workloads in order and tears
// the schema down. It returns the results of the workloads that finished.
func runWorkloads(ctx context.Context, o options, log io.Writer) (results []Result, err error) {
	urls := []string{o.databaseURL}
	if len(o.shards) > 0 {
		urls = urls[:0]
		for _, sh := range o.shards {
			urls = append(urls, sh.URL)
		}
	}
	b := &bench{o: o, log: log,
		slog: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	defer func() {
		for _, pool := range b.pools {
			pool.Close()
		}
	}()
	for _, url := range urls {
		pool, err := b.openSchema(ctx, url)
		if err != nil {
			return nil, err
		}
		b.pools = append(b.pools, pool)
		if o.manageSchema && !o.keep {
			defer func() {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				defer cancel()
				if _, derr := pool.Exec(dctx, "DROP SCHEMA IF EXISTS "+o.schema+" CASCADE"); derr != nil {
					err = errors.Join(err, fmt.Errorf("drop schema %s: %w", o.schema, derr))
				}
			}()
		}
	}
	b.pool = b.pools[0]
	if o.metrics {
		stop, err := b.scrapeMetrics()
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	if o.traces {
		var stop func()
		ctx, stop = b.startTracing(ctx)
		defer stop()
	}
	for _, w := range o.workloads {
		fmt.Fprintf(log, "bench: %s (scale %g) ...\n", w, o.scale)
		res, err := b.workload(ctx, w)
		if err != nil {
			return results, fmt.Errorf("%s: %w", w, err)
		}
		fmt.Fprintf(log, "bench: %s done in %.2fs\n", w, res.Seconds)
		results = append(results, res)
	}
	return results, nil
}

// openSchema opens a pool on the database at url, resets -schema there
// (when the benchmark manages it) and migrates it.
func (b *bench) openSchema(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := openPool(ctx, b.o, url)
	if err != nil {
		return nil, err
	}
	if b.o.manageSchema {
		if err := resetSchema(ctx, pool, b.o.schema); err != nil {
			pool.Close()
			return nil, err
		}
	}
	if err := pgstore.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate schema %s: %w", b.o.schema, err)
	}
	return pool, nil
}

func (b *bench) workload(ctx context.Context, name string) (Result, error) {
	timeout := b.o.timeout
	switch name {
	case "soak":
		timeout += time.Duration(float64(b.o.soakDuration) * b.o.scale)
	case "backlog1m":
		// Four times single_step's runs, triggered and drained.
		timeout *= 4
	case "fairness1m":
		// backlog1m's runs triggered, not drained: A's runs take seconds.
		timeout *= 2
	case "wide10k":
		// Besides the drain, the generator and two programs are built,
		// from a cold build cache the first time.
		timeout *= 2
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("workload %s: -timeout %s exceeded", name, timeout))
	defer cancel()
	if err := b.truncate(ctx); err != nil {
		return Result{}, err
	}
	procstat.ResetPeakRSS()
	res := Result{
		Peer: "dagen", Workload: name,
		Concurrency: b.o.concurrency, BatchSize: b.batchSize(), PollMs: float64(b.o.pollInterval) / float64(time.Millisecond),
		MaxConns: b.o.maxConns, GoMaxProcs: runtime.GOMAXPROCS(0), Shards: len(b.o.shards),
	}
	if b.o.tenants > 1 {
		res.Tenants = b.o.tenants
	}
	var err error
	switch name {
	case "single_step":
		err = b.throughput(ctx, &res, singleName, b.scaled(singleRuns), 1, func(i int) any { return flows.Single{N: i} })
	case "single_capped":
		runs := b.scaled(cappedRuns)
		res.Keys = max(1, runs/cappedRunsPerKey)
		err = b.throughput(ctx, &res, cappedName, runs, 1, func(i int) any {
			return flows.Capped{Key: fmt.Sprintf("k%d", i%res.Keys), N: i}
		})
	case "single_limited":
		// single_step whose step takes a token of a limit that never
		// binds, from one of 100 buckets.
		b.limited = true
		defer func() { b.limited = false }()
		err = b.throughput(ctx, &res, limitedName, b.scaled(singleRuns), 1, func(i int) any {
			return flows.Limited{Key: fmt.Sprintf("k%d", i%100), N: i}
		})
	case "single_flow":
		// single_step with run priorities (0 to 9, in turn) over four
		// tenants of weights 1 to 4: the fair queue's places go to the
		// tenants' entries of the highest priority.
		err = b.throughputFlow(ctx, &res, b.scaled(singleRuns))
	case "chain10":
		err = b.throughput(ctx, &res, chainName, b.scaled(chainRuns), chainSteps, func(i int) any { return flows.Chain{N: i} })
		if err == nil {
			err = b.runLatency(ctx, &res, chainName)
		}
	case "backlog1m":
		err = b.backlog(ctx, &res)
	case "chain20":
		err = b.throughput(ctx, &res, chain20Name, b.scaled(chain20Runs), 2*chainSteps, func(i int) any { return flows.Chain20{N: i} })
	case "chain10_child":
		// Each run's child run is a run of its own in the store: the
		// drain waits for both, and both must complete.
		err = b.throughputRuns(ctx, &res, chainParentName, b.scaled(chain20Runs), 2*chainSteps, 2, func(i int) any { return flows.ChainParent{N: i} })
	case "wide10k":
		err = b.wide(ctx, &res)
	case "fan50":
		err = b.throughput(ctx, &res, fanName, b.scaled(fanRuns), fanSteps, func(i int) any { return flows.Fan{N: i} })
	case "map100k":
		res.Elements = b.scaled(mapBigElements)
		err = b.throughput(ctx, &res, mapName, 1, mapSteps+res.Elements, func(int) any { return flows.Map{N: res.Elements} })
	case "map1k":
		res.Elements = mapSmallElements
		err = b.throughput(ctx, &res, mapName, b.scaled(mapSmallRuns), mapSteps+res.Elements, func(int) any { return flows.Map{N: res.Elements} })
	case "trigger", "trigger_key":
		err = b.triggers(ctx, &res, name == "trigger_key")
	case "payload":
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		data := strings.Repeat("x", payloadBytes)
		err = b.throughput(ctx, &res, blobName, 1, blobSteps, func(int) any { return flows.Blob{Data: data} })
		runtime.ReadMemStats(&after)
		res.AllocMB = figures.Round(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), 1)
	case "fairness":
		err = b.fairness(ctx, &res, b.fairnessB())
	case "fairness1m":
		err = b.fairness(ctx, &res, b.fairness1mB())
	case "low_load":
		err = b.lowLoad(ctx, &res)
	case "soak":
		err = b.soak(ctx, &res)
	default:
		err = fmt.Errorf("unknown workload %q", name)
	}
	if err != nil {
		return res, err
	}
	// wide10k's worker is the program it built: that process measured
	// its own RSS.
	if name != "wide10k" {
		peak, now := procstat.RSSMB()
		res.RSSMB, res.RSSNowMB = figures.Round(peak, 1), figures.Round(now, 1)
	}
	if res.Steps > 0 {
		res.CPUUsPerStep = figures.Round(1e6*(res.WorkerCPUSec+res.PGCPUSec)/float64(res.Steps), 1)
		res.PGBuffersPerStep = figures.Round(float64(res.PGBuffers)/float64(res.Steps), 1)
		res.PGWALRecordsPerStep = figures.Round(float64(res.PGWALRecords)/float64(res.Steps), 2)
	}
	return res, nil
}

// batchSize is the engine's BatchSize: -batch, or Concurrency by default.
func (b *bench) batchSize() int {
	if b.o.batchSize > 0 {
		return b.o.batchSize
	}
	return b.o.concurrency
}

// scaled returns n times -scale, at least 1.
func (b *bench) scaled(n int) int {
	return max(1, int(math.Round(float64(n)*b.o.scale)))
}

// handles are the typed workflows registered on one engine.
type handles struct {
	single *flows.SingleWorkflow
	pair   *flows.PairWorkflow
}

// worker is one engine over its own store on the shared pools.
type worker struct {
	e *engine.Engine
	// closeStore closes the engine's store (its pgstores, with -shards).
	closeStore func()
	h          handles
	probe      *flows.Probe
}

// sessionURL returns -session-url with the schema as its search_path, or
// "" when none was given.
func (b *bench) sessionURL() string {
	if b.o.sessionURL == "" {
		return ""
	}
	sep := "?"
	if strings.Contains(b.o.sessionURL, "?") {
		sep = "&"
	}
	return b.o.sessionURL + sep + "search_path=" + b.o.schema
}

// newWorker makes an engine with every benchmark workflow registered.
func (b *bench) newWorker(ctx context.Context, disableNotify bool) (*worker, error) {
	return b.newWorkerWith(ctx, func(c *engine.Config) { c.DisableNotify = disableNotify })
}

// newWorkerWith is newWorker with the engine's config changed by tweak.
func (b *bench) newWorkerWith(ctx context.Context, tweak func(*engine.Config)) (*worker, error) {
	st, closeStore, err := b.newStore(ctx)
	if err != nil {
		return nil, err
	}
	cfg := &engine.Config{
		Concurrency:  b.o.concurrency,
		BatchSize:    b.o.batchSize,
		PollInterval: b.o.pollInterval,
		Logger:       b.slog,
		MaxPayload:   2 * payloadBytes, // the payload workload's input fits

		DisableEagerContinue: b.o.noContinue,
		MeterProvider:        b.mp,
		TracerProvider:       b.tp,
	}
	tweak(cfg)
	es := st
	if b.claims != nil {
		pg, ok := st.(*pgstore.Store)
		if !ok {
			closeStore()
			return nil, errors.New("the claims are timed on an unsharded store only")
		}
		es = timedStore{Store: pg, claims: b.claims}
	}
	e, err := engine.New(es, cfg)
	if err != nil {
		closeStore()
		return nil, fmt.Errorf("new engine: %w", err)
	}
	w := &worker{e: e, closeStore: closeStore, probe: &flows.Probe{}}
	if w.h.single, err = flows.NewSingleWorkflow(e); err != nil {
		return nil, err
	}
	if w.h.pair, err = flows.NewPairWorkflow(e); err != nil {
		return nil, err
	}
	if _, err = flows.NewCappedWorkflow(e); err != nil {
		return nil, err
	}
	if _, err = flows.NewChainWorkflow(e); err != nil {
		return nil, err
	}
	if _, err = flows.NewChain20Workflow(e); err != nil {
		return nil, err
	}
	if _, err = flows.NewChildChainWorkflow(e); err != nil {
		return nil, err
	}
	if _, err = flows.NewChainParentWorkflow(e); err != nil {
		return nil, err
	}
	if _, err = flows.NewFanWorkflow(e); err != nil {
		return nil, err
	}
	if _, err = flows.NewMapWorkflow(e); err != nil {
		return nil, err
	}
	if _, err = flows.NewBlobWorkflow(e); err != nil {
		return nil, err
	}
	// Only single_limited's engines know the rate-limited workflow: an
	// engine puts its limits in the store when it starts, and a schema
	// with a rate limit claims by the flow's statement (see truncate).
	if b.limited {
		if _, err = flows.NewLimitedWorkflow(e); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// newStore returns a worker's store and what closes it: a pgstore on the
// pool, or with -shards a shardstore over one pgstore a shard, routed by
// an even map of the shards in the order given.
func (b *bench) newStore(ctx context.Context) (store.Store, func(), error) {
	cfg := &pgstore.Config{NotifyEvery: b.o.notifyEvery, PartitionPeriod: b.o.partitionPeriod, SessionURL: b.sessionURL()}
	if len(b.o.shards) == 0 {
		st, err := pgstore.New(ctx, b.pool, cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("new store: %w", err)
		}
		return st, st.Close, nil
	}
	var shards []shardstore.Shard
	var names []string
	closeAll := func() {
		for _, sh := range shards {
			sh.Store.(*pgstore.Store).Close()
		}
	}
	for i, sh := range b.o.shards {
		st, err := pgstore.New(ctx, b.pools[i], cfg)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("new store on shard %s: %w", sh.Name, err)
		}
		shards = append(shards, shardstore.Shard{Name: sh.Name, Store: st})
		names = append(names, sh.Name)
	}
	st, err := shardstore.New(shards, shardstore.EvenMap(names...), nil)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return st, closeAll, nil
}

// start starts the engine with the probe in the steps' context.
func (w *worker) start(ctx context.Context) error {
	if err := w.e.Start(flows.WithProbe(context.WithoutCancel(ctx), w.probe)); err != nil {
		return fmt.Errorf("start engine: %w", err)
	}
	return nil
}

// stop stops the engine and gives up the store's leadership.
func (w *worker) stop(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := w.e.Stop(sctx)
	if errors.Is(err, engine.ErrNotStarted) {
		err = nil
	}
	w.closeStore()
	if err != nil {
		return fmt.Errorf("stop engine: %w", err)
	}
	return nil
}

// enqueue triggers n runs of workflow in chunks, run i for tenants[i %
// len(tenants)].
func enqueue(ctx context.Context, e *engine.Engine, workflow string, tenants []string, n int, input func(i int) any) error {
	reqs := make([]engine.TriggerRequest, 0, triggerChunk)
	for i := 0; i < n; i += triggerChunk {
		reqs = reqs[:0]
		for j := i; j < min(n, i+triggerChunk); j++ {
			reqs = append(reqs, engine.TriggerRequest{Workflow: workflow, Tenant: tenants[j%len(tenants)], Input: input(j)})
		}
		if _, err := e.TriggerMany(ctx, reqs); err != nil {
			return fmt.Errorf("enqueue %d %s runs: %w", n, workflow, err)
		}
	}
	return nil
}

// throughputFlow is single_step's throughput with run priorities and
// tenant weights: four tenants of weights 1 to 4, each run's priority its
// number modulo 10.
func (b *bench) throughputFlow(ctx context.Context, res *Result, runs int) error {
	tenants := []string{"flow-1", "flow-2", "flow-3", "flow-4"}
	return b.throughputOf(ctx, res, runs, 1, 1, func(w *worker) error {
		for i, tenant := range tenants {
			if err := w.e.SetTenantWeight(ctx, tenant, i+1); err != nil {
				return err
			}
		}
		reqs := make([]engine.TriggerRequest, 0, triggerChunk)
		for i := 0; i < runs; i += triggerChunk {
			reqs = reqs[:0]
			for j := i; j < min(runs, i+triggerChunk); j++ {
				reqs = append(reqs, engine.TriggerRequest{Workflow: singleName, Tenant: tenants[j%len(tenants)], Input: flows.Single{N: j}, Priority: j % 10})
			}
			if _, err := w.e.TriggerMany(ctx, reqs); err != nil {
				return fmt.Errorf("enqueue %d %s runs: %w", runs, singleName, err)
			}
		}
		return nil
	})
}

// throughput enqueues runs of workflow, then starts an engine and times it
// from Start until the last run is finished in the store.
func (b *bench) throughput(ctx context.Context, res *Result, workflow string, runs, stepsPerRun int, input func(i int) any) (err error) {
	return b.throughputRuns(ctx, res, workflow, runs, stepsPerRun, 1, input)
}

// throughputRuns is throughput for a workflow each run of which makes
// stored runs in the store (itself and its child runs).
func (b *bench) throughputRuns(ctx context.Context, res *Result, workflow string, runs, stepsPerRun, stored int, input func(i int) any) error {
	return b.throughputOf(ctx, res, runs, stepsPerRun, stored, func(w *worker) error {
		return enqueue(ctx, w.e, workflow, b.tenants(), runs, input)
	})
}

// tenants returns the throughput workloads' tenants: "bench", or with
// -tenants N above 1, bench-000 to bench-N-1.
func (b *bench) tenants() []string {
	if b.o.tenants <= 1 {
		return []string{benchTenant}
	}
	out := make([]string, b.o.tenants)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", benchTenant, i)
	}
	return out
}

// throughputOf is throughputRuns with the runs triggered by trigger.
func (b *bench) throughputOf(ctx context.Context, res *Result, runs, stepsPerRun, stored int, trigger func(w *worker) error) (err error) {
	w, err := b.newWorker(ctx, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.stop(ctx)) }()
	t0 := time.Now()
	if err := trigger(w); err != nil {
		return err
	}
	res.TriggerSeconds = figures.Round(time.Since(t0).Seconds(), 3)
	triggerPeak, _ := procstat.RSSMB()
	res.TriggerRSSMB = figures.Round(triggerPeak, 1)
	// Part of the trigger phase's heap survived FreeOSMemory's own
	// collection and went only at the next: 30 MB of fan50's, which
	// doubled the engine's first heap goal.
	runtime.GC()
	debug.FreeOSMemory()
	procstat.ResetPeakRSS()
	win := b.startWindow(ctx)
	start := time.Now()
	if err := w.start(ctx); err != nil {
		return err
	}
	end, err := b.waitFinished(ctx, w.probe, int64(runs), stored*runs)
	win.stop(ctx, res, end.Sub(start))
	if err != nil {
		return err
	}
	res.Runs = runs
	res.Steps = runs * stepsPerRun
	res.StepsPerSec = figures.Round(float64(res.Steps)/res.Seconds, 0)
	done, err := b.checkCompleted(ctx, stored*runs)
	res.Completed = done / stored // runs of the workflow, their child runs aside
	return err
}

// runLatency sets p50/p99 of finished_at − created_at of the workflow's
// runs.
func (b *bench) runLatency(ctx context.Context, res *Result, workflow string) error {
	var ms []float64
	err := b.queryAll(ctx,
		"SELECT extract(epoch FROM finished_at - created_at)::float8 * 1000 FROM dagen_runs WHERE workflow = $1 AND finished_at IS NOT NULL",
		[]any{workflow}, func(rows pgx.Rows) error {
			var v float64
			err := rows.Scan(&v)
			ms = append(ms, v)
			return err
		})
	if err != nil {
		return fmt.Errorf("read run latencies: %w", err)
	}
	if len(ms) == 0 {
		return errors.New("no finished runs to measure latency on")
	}
	res.P50Ms, res.P99Ms = figures.Percentiles(ms)
	return nil
}

// fairBacklog is the backlog of a fairness workload, the "B" its
// tenant A runs behind: how many runs, over how many tenants, and how
// they are enqueued.
type fairBacklog struct {
	runs, tenants int
	enqueue       func(ctx context.Context, e *engine.Engine) error
	// drain: wait for the whole backlog after A's loaded runs, and time
	// it; otherwise the workload ends with A's runs, the backlog left
	// (the next workload truncates it).
	drain bool
}

// fairnessB is fairness's backlog: tenant B's 20,000 runs, drained.
func (b *bench) fairnessB() fairBacklog {
	n := b.scaled(fairBRuns)
	return fairBacklog{runs: n, tenants: 1, drain: true, enqueue: func(ctx context.Context, e *engine.Engine) error {
		return enqueue(ctx, e, singleName, []string{tenantB}, n, func(i int) any { return flows.Single{N: i} })
	}}
}

// fairness1mB is fairness1m's backlog: backlog1m's, a million runs over
// 10,000 tenants drawn from a Zipf distribution, not drained.
func (b *bench) fairness1mB() fairBacklog {
	runs, tenants := b.scaled(backlogRuns), max(1, b.scaled(backlogTenants))
	return fairBacklog{runs: runs, tenants: tenants, enqueue: func(ctx context.Context, e *engine.Engine) error {
		return enqueueBacklog(ctx, e, runs, tenants)
	}}
}

// fairness measures tenant A's latency, one run at a time, first on an
// idle engine and then behind the backlog bl, as it drains.
func (b *bench) fairness(ctx context.Context, res *Result, bl fairBacklog) (err error) {
	nA, nB := b.scaled(fairARuns), bl.runs
	w, err := b.newWorker(ctx, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.stop(ctx)) }()
	if err := w.start(ctx); err != nil {
		return err
	}
	// The commit probe's own table, dropped at the end.
	if _, err := b.pool.Exec(ctx, `CREATE TABLE bench_commit_probe (id int PRIMARY KEY, n bigint NOT NULL);
		INSERT INTO bench_commit_probe VALUES (1, 0)`); err != nil {
		return fmt.Errorf("create commit probe: %w", err)
	}
	defer func() {
		if _, derr := b.pool.Exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS bench_commit_probe"); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop commit probe: %w", derr))
		}
	}()
	var loadedIDs []dag.RunID
	var commits []float64         // the probe's, before each of A's runs
	var triggers, waits []float64 // A's loaded runs' Start and Wait
	runA := func(i int) (time.Duration, error) {
		t0 := time.Now()
		if _, err := b.pool.Exec(ctx, "UPDATE bench_commit_probe SET n = n + 1 WHERE id = 1"); err != nil {
			return 0, fmt.Errorf("commit probe: %w", err)
		}
		commits = append(commits, figures.Ms(time.Since(t0)))
		t0 = time.Now()
		r, err := w.h.single.Start(ctx, tenantA, flows.Single{N: i})
		if err != nil {
			return 0, fmt.Errorf("tenant A run %d: %w", i, err)
		}
		started := time.Now()
		if _, err := r.Wait(ctx); err != nil {
			return 0, fmt.Errorf("tenant A run %d: %w", i, err)
		}
		if i >= nA {
			loadedIDs = append(loadedIDs, r.ID())
			triggers = append(triggers, figures.Ms(started.Sub(t0)))
			waits = append(waits, figures.Ms(time.Since(started)))
		}
		return time.Since(t0), nil
	}
	// Warm up first: a connection's first use of each statement prepares
	// it, a round trip more, and the loaded phase runs on warm connections.
	for i := range fairWarmRuns {
		if _, err := runA(-1 - i); err != nil {
			return err
		}
	}
	idle := make([]float64, 0, nA)
	for i := range nA {
		d, err := runA(i)
		if err != nil {
			return err
		}
		idle = append(idle, figures.Ms(d))
	}

	// B's whole backlog is in the queue before A's first loaded run: the
	// engine stands still while B enqueues (running, it would drain much of
	// B's backlog before the enqueue ends).
	if err := w.e.Stop(ctx); err != nil {
		return fmt.Errorf("pause engine for B's enqueue: %w", err)
	}
	enqStart := time.Now()
	if err := bl.enqueue(ctx, w.e); err != nil {
		return err
	}
	res.BEnqueueSec = figures.Round(time.Since(enqStart).Seconds(), 3)
	win := b.startWindow(ctx)
	start := time.Now()
	if err := w.start(ctx); err != nil {
		return err
	}
	loaded := make([]float64, 0, nA)
	for i := range nA {
		d, err := runA(nA + i)
		if err != nil {
			return err
		}
		loaded = append(loaded, figures.Ms(d))
		// The probe counts every run's step, A's included.
		if bDone := w.probe.Done() - int64(fairWarmRuns+nA+i+1); bDone < int64(nB) {
			res.UnderLoad++
		}
	}
	res.ALoadedSec = figures.Round(time.Since(start).Seconds(), 3)
	aRuns := fairWarmRuns + 2*nA
	all := aRuns + nB
	if bl.drain {
		end, err := b.waitFinished(ctx, w.probe, int64(all), all)
		win.stop(ctx, res, end.Sub(start))
		if err != nil {
			return err
		}
		res.Runs = all
		res.BDrainedSec = res.Seconds
	} else {
		// The backlog stays: the window is A's loaded runs, and the runs
		// judged are A's.
		win.stop(ctx, res, time.Since(start))
		res.Runs = aRuns
		res.BDoneRuns = int(w.probe.Done()) - aRuns
		if err := w.e.Stop(ctx); err != nil {
			return fmt.Errorf("stop the engine behind the backlog: %w", err)
		}
	}
	res.BRuns = nB
	if bl.tenants > 1 {
		res.Tenants = bl.tenants
	}
	res.IdleP50Ms, res.IdleP99Ms = figures.Percentiles(idle)
	res.P50Ms, res.P99Ms = figures.Percentiles(loaded)
	if res.IdleP99Ms > 0 {
		res.P99Ratio = figures.Round(res.P99Ms/res.IdleP99Ms, 2)
	}
	// commits holds the warm-up's, then the idle runs', then the loaded
	// runs' probes.
	res.CommitIdleP50Ms, res.CommitIdleP99Ms = figures.Percentiles(commits[fairWarmRuns : fairWarmRuns+nA])
	res.CommitP50Ms, res.CommitP99Ms = figures.Percentiles(commits[fairWarmRuns+nA:])
	if res.CommitIdleP99Ms > 0 {
		res.CommitP99Ratio = figures.Round(res.CommitP99Ms/res.CommitIdleP99Ms, 2)
	}
	// Where A's loaded latency went: waiting in the queue (QUEUED to
	// STARTED) and from the claim to the stored completion.
	var queued, claimed []float64
	var windows []aWindow
	for _, id := range loadedIDs {
		evs, err := w.e.Events(ctx, id)
		if err != nil {
			return fmt.Errorf("events of run %s: %w", id, err)
		}
		q, c, ok := taskPhases(evs, "Only")
		if !ok {
			return fmt.Errorf("run %s: no QUEUED, STARTED and COMPLETED events in its %d events", id, len(evs))
		}
		queued, claimed = append(queued, figures.Ms(q)), append(claimed, figures.Ms(c))
		qAt, sAt, _ := taskTimes(evs, "Only")
		windows = append(windows, aWindow{queued: qAt, started: sAt})
	}
	res.TriggerP50Ms, res.TriggerP99Ms = figures.Percentiles(triggers)
	res.WaitP50Ms, res.WaitP99Ms = figures.Percentiles(waits)
	res.QueuedP50Ms, res.QueuedP99Ms = figures.Percentiles(queued)
	res.ClaimedP50Ms, res.ClaimedP99Ms = figures.Percentiles(claimed)
	if res.CommitP99Ms > 0 {
		res.AOverCommitP99 = figures.Round(res.P99Ms/res.CommitP99Ms, 2)
	}
	bStarts, err := b.startTimes(ctx, windows)
	if err != nil {
		return err
	}
	res.BStepsMax, res.BStepsP99 = overtakes(windows, bStarts)
	if bl.drain {
		res.Completed, err = b.checkCompleted(ctx, res.Runs)
		return err
	}
	res.Completed, err = b.count(ctx, "SELECT count(*) FROM dagen_runs WHERE tenant = $1 AND status = $2", tenantA, string(store.RunCompleted))
	if err != nil {
		return fmt.Errorf("count tenant A's completed runs: %w", err)
	}
	if res.Completed != res.Runs {
		return fmt.Errorf("%d of tenant A's %d runs COMPLETED", res.Completed, res.Runs)
	}
	return nil
}

// aWindow is when one of tenant A's steps was QUEUED and when it STARTED.
type aWindow struct{ queued, started time.Time }

// startTimes returns, sorted, when each step of the tenants other than
// A last started (dagen_tasks.started_at, the STARTED event the event
// log reads from the task's row) between the first of A's windows and
// the last: one query, where the store's Events would take one a run,
// reading the starts of the span A's runs waited in, not a backlog's
// million.
func (b *bench) startTimes(ctx context.Context, windows []aWindow) ([]time.Time, error) {
	if len(windows) == 0 {
		return nil, nil
	}
	from, to := windows[0].queued, windows[0].started
	for _, w := range windows {
		if w.queued.Before(from) {
			from = w.queued
		}
		if w.started.After(to) {
			to = w.started
		}
	}
	var out []time.Time
	err := b.queryAll(ctx, `SELECT t.started_at FROM dagen_tasks t JOIN dagen_runs r ON r.id = t.run_id
		WHERE t.started_at > $2 AND t.started_at < $3 AND r.tenant <> $1`, []any{tenantA, from, to}, func(rows pgx.Rows) error {
		var at time.Time
		err := rows.Scan(&at)
		out = append(out, at)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the other tenants' step starts while A's runs waited: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out, nil
}

// overtakes counts, for each of A's windows, the starts (sorted) strictly
// inside it: the steps of another tenant that started while A's step
// waited. It returns the most and the nearest-rank p99 of those counts.
func overtakes(windows []aWindow, starts []time.Time) (most, p99 int) {
	if len(windows) == 0 {
		return 0, 0
	}
	counts := make([]int, 0, len(windows))
	for _, w := range windows {
		lo := sort.Search(len(starts), func(i int) bool { return starts[i].After(w.queued) })
		hi := sort.Search(len(starts), func(i int) bool { return !starts[i].Before(w.started) })
		counts = append(counts, max(0, hi-lo))
	}
	sort.Ints(counts)
	i := int(math.Ceil(0.99*float64(len(counts)))) - 1
	return counts[len(counts)-1], counts[min(max(i, 0), len(counts)-1)]
}

// taskPhases returns, for step's first attempt, the time from QUEUED to
// STARTED and from STARTED to COMPLETED.
func taskPhases(evs []store.Event, step string) (queued, claimed time.Duration, ok bool) {
	q, st, done := taskTimes(evs, step)
	if q.IsZero() || st.IsZero() || done.IsZero() {
		return 0, 0, false
	}
	return st.Sub(q), done.Sub(st), true
}

// taskTimes returns when step was first QUEUED and first STARTED, and when
// it last COMPLETED; zero times for the events it does not have.
func taskTimes(evs []store.Event, step string) (q, st, done time.Time) {
	for _, ev := range evs {
		if ev.Step != step {
			continue
		}
		switch {
		case ev.Type == store.EventQueued && q.IsZero():
			q = ev.At
		case ev.Type == store.EventStarted && st.IsZero():
			st = ev.At
		case ev.Type == store.EventCompleted:
			done = ev.At
		}
	}
	return q, st, done
}

// lowLoad starts one Pair run every lowLoadEvery and measures, from the
// event log, how long B waited after A completed: once with the store's
// notifications and once with polling alone. B goes through the ready
// queue (DisableEagerContinue): what is measured is how fast an idle
// worker hears of queued work. By default, A's completing transaction
// starts B itself, in the same instant.
func (b *bench) lowLoad(ctx context.Context, res *Result) error {
	n := b.scaled(lowLoadRuns)
	win := b.startWindow(ctx)
	start := time.Now()
	notify, missed1, err := b.lowLoadOnce(ctx, n, false)
	if err != nil {
		return fmt.Errorf("with notifications: %w", err)
	}
	completed, err := b.checkCompleted(ctx, n)
	if err != nil {
		return fmt.Errorf("with notifications: %w", err)
	}
	if err := b.truncate(ctx); err != nil {
		return err
	}
	poll, missed2, err := b.lowLoadOnce(ctx, n, true)
	if err != nil {
		return fmt.Errorf("polling alone: %w", err)
	}
	win.stop(ctx, res, time.Since(start))
	c2, err := b.checkCompleted(ctx, n)
	if err != nil {
		return fmt.Errorf("polling alone: %w", err)
	}
	res.Runs = 2 * n
	res.Completed = completed + c2
	res.Steps = 4 * n
	res.MissedTicks = missed1 + missed2
	res.P50Ms, res.P99Ms = figures.Percentiles(notify)
	res.PollP50Ms, res.PollP99Ms = figures.Percentiles(poll)
	return nil
}

// lowLoadOnce runs one half of low_load and returns the step-to-step
// latencies in ms and the ticks missed.
func (b *bench) lowLoadOnce(ctx context.Context, n int, disableNotify bool) (lat []float64, missed int, err error) {
	w, err := b.newWorkerWith(ctx, func(c *engine.Config) {
		c.DisableNotify, c.DisableEagerContinue = disableNotify, true
	})
	if err != nil {
		return nil, 0, err
	}
	defer func() { err = errors.Join(err, w.stop(ctx)) }()
	if err := w.start(ctx); err != nil {
		return nil, 0, err
	}
	ids := make([]dag.RunID, 0, n)
	t := time.NewTicker(lowLoadEvery)
	defer t.Stop()
	last := time.Now()
	for i := range n {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, 0, context.Cause(ctx)
			case now := <-t.C:
				missed += max(0, int(now.Sub(last)/lowLoadEvery)-1)
				last = now
			}
		}
		r, err := w.h.pair.Start(ctx, benchTenant, flows.Pair{N: i})
		if err != nil {
			return nil, 0, fmt.Errorf("start pair run %d: %w", i, err)
		}
		ids = append(ids, r.ID())
	}
	if _, err := b.waitFinished(ctx, w.probe, int64(n), n); err != nil {
		return nil, 0, err
	}
	lat = make([]float64, 0, n)
	for _, id := range ids {
		evs, err := w.e.Events(ctx, id)
		if err != nil {
			return nil, 0, fmt.Errorf("events of run %s: %w", id, err)
		}
		d, ok := stepToStep(evs, "A", "B")
		if !ok {
			return nil, 0, fmt.Errorf("run %s: no A COMPLETED and B STARTED in its %d events", id, len(evs))
		}
		lat = append(lat, figures.Ms(d))
	}
	return lat, missed, nil
}

// stepToStep returns the time from the last COMPLETED event of step from
// to the first STARTED event of step to after it.
func stepToStep(evs []store.Event, from, to string) (time.Duration, bool) {
	var done time.Time
	for _, ev := range evs {
		switch {
		case ev.Step == from && ev.Type == store.EventCompleted:
			done = ev.At
		case ev.Step == to && ev.Type == store.EventStarted && !done.IsZero():
			return ev.At.Sub(done), true
		}
	}
	return 0, false
}

// waitFinished waits until the store holds want finished runs and returns
// when it saw them. The probe (bumped by each run's last step) says when
// to look: the store is read once the probe reaches probeWant, or when it
// has not moved for a second (so a failed run cannot hang the wait), and
// not otherwise, so the wait puts no load on the database it measures.
func (b *bench) waitFinished(ctx context.Context, probe *flows.Probe, probeWant int64, want int) (time.Time, error) {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	lastDone, lastMove := probe.Done(), time.Now()
	got := 0
	for {
		now, done := time.Now(), probe.Done()
		if done != lastDone {
			lastDone, lastMove = done, now
		}
		if done >= probeWant || now.Sub(lastMove) >= time.Second {
			if now.Sub(lastMove) >= time.Second {
				lastMove = now
			}
			var err error
			if got, err = b.count(ctx, "SELECT count(*) FROM dagen_runs WHERE finished_at IS NOT NULL"); err != nil {
				return time.Time{}, fmt.Errorf("count finished runs: %w", err)
			}
			if got >= want {
				return time.Now(), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d of %d runs finished: %w", got, want, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// checkCompleted checks that the store holds exactly want runs, all
// COMPLETED, and returns how many are.
func (b *bench) checkCompleted(ctx context.Context, want int) (int, error) {
	counts := map[string]int{}
	err := b.queryAll(ctx, "SELECT status, count(*) FROM dagen_runs GROUP BY status", nil, func(rows pgx.Rows) error {
		var s string
		var n int
		err := rows.Scan(&s, &n)
		counts[s] += n
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("count runs by status: %w", err)
	}
	done := counts[string(store.RunCompleted)]
	if done != want || len(counts) > 1 {
		return done, fmt.Errorf("want %d runs COMPLETED, have %v", want, counts)
	}
	return done, nil
}

// triggerRuns and triggerCallers shape the trigger workloads: runs of the
// one-step workflow, each started by its own Trigger call, from this many
// goroutines at once, on an engine that does not run them.
const (
	triggerRuns    = 20_000
	triggerCallers = 16
)

// triggers times Trigger calls, each creating one run, from many
// goroutines: with keyed, each with an idempotency key of its own (a
// first trigger: every key is new), so the keyed path's cost shows.
func (b *bench) triggers(ctx context.Context, res *Result, keyed bool) (err error) {
	w, err := b.newWorker(ctx, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.stop(ctx)) }()
	n := b.scaled(triggerRuns)
	var next atomic.Int64
	errs := make(chan error, triggerCallers)
	win := b.startWindow(ctx)
	start := time.Now()
	var wg sync.WaitGroup
	for range triggerCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				var opts []engine.TriggerOption
				if keyed {
					opts = append(opts, engine.WithKey("order-"+strconv.Itoa(i)))
				}
				if _, err := w.e.Trigger(ctx, singleName, benchTenant, flows.Single{N: i}, opts...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	win.stop(ctx, res, time.Since(start))
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	res.Runs, res.Steps = n, n
	res.StepsPerSec = figures.Round(float64(n)/res.Seconds, 0)
	// Completed counts the runs the triggers created: they are not run.
	created, err := b.count(ctx, "SELECT count(*) FROM dagen_runs WHERE workflow = $1", singleName)
	if err != nil {
		return fmt.Errorf("count created runs: %w", err)
	}
	res.Completed = created
	return nil
}
