package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dagenhq/dagen/bench/figures"
	"github.com/dagenhq/dagen/examples/bench/flows"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// The soak: chain10 runs triggered at a fixed rate for a long while, on an
// engine that prunes runs a minute after they finish, watched minute by
// minute.
const (
	// soakFraction of chain10's peak is the rate the soak triggers at.
	soakFraction = 0.7
	// soakRetention is the engine's Retention in the soak. The leader
	// prunes every quarter of it, and drops a range of runs (half of it
	// wide, at least a minute) once all its runs finished a retention
	// ago, so a finished run is gone two to three minutes after.
	soakRetention = time.Minute
	// soakTick is how often the trigger loop catches up with the rate.
	soakTick = 10 * time.Millisecond
	// soakPeakTime is how long the peak is measured, at scale 1 (at least
	// a second), after the engine's first turnover. A minute, with the
	// soak's retention: over ten seconds on empty tables the peak was a
	// burst (1,150 to 1,510 runs/s from one run to the next) that 70% of
	// did not hold once the tables had grown to the minutes of history
	// the retention keeps.
	soakPeakTime = time.Minute
	// soakSamples is how many runs a minute have their event log read for
	// the latencies, at scale 1 (at least soakMinSamples).
	soakSamples    = 200
	soakMinSamples = 20
	// The size verdict compares the last minute with the end of minute
	// soakSizeRef: retention keeps a minute of runs and pruning only starts
	// to delete after the first minute or two, so the tables grow until
	// then whatever happens next. Soaks shorter than soakSizeMin do not
	// judge sizes.
	soakSizeRef = 3 * time.Minute
	soakSizeMin = 5 * time.Minute
)

// The soak's targets: its last minute against its first.
const (
	soakMinThroughput = 0.95 // steps/s, last ÷ first, at least
	soakMaxP99        = 1.5  // step wait p99, last ÷ first, at most
	soakMaxSize       = 1.1  // total size, last ÷ end of minute 3, at most
)

// SoakReport is the soak workload's figures, minute by minute, and its
// verdict.
type SoakReport struct {
	// PeakRunsPerSec is chain10's measured peak: runs finished a second
	// with runs triggered as others finish (see soakPeak); 0 when
	// -soak-rate set the rate.
	PeakRunsPerSec float64 `json:"peak_runs_per_sec,omitempty"`
	// RunsPerSec is the rate the runs were triggered at.
	RunsPerSec   float64 `json:"runs_per_sec"`
	DurationSec  float64 `json:"duration_s"`
	IntervalSec  float64 `json:"interval_s"`
	RetentionSec float64 `json:"retention_s"`
	// DrainSec is how long the runs left at the end took to finish.
	DrainSec float64      `json:"drain_s"`
	Minutes  []SoakMinute `json:"minutes"`
	// The verdict's figures: last minute ÷ first for throughput and step
	// wait p99; last minute's total size ÷ the size at the end of minute
	// SizeRefMinute (0: not judged, the soak being too short).
	ThroughputRatio float64 `json:"throughput_last_over_first"`
	P99Ratio        float64 `json:"p99_last_over_first"`
	SizeRatio       float64 `json:"size_last_over_ref,omitempty"`
	SizeRefMinute   int     `json:"size_ref_minute,omitempty"`
	// Verdict is "meets" or what missed its target.
	Verdict string `json:"verdict"`
}

// SoakMinute is one interval of the soak (a minute at scale 1).
type SoakMinute struct {
	Minute int     `json:"minute"`
	EndSec float64 `json:"end_s"`
	// StepsPerSec is the steps of the runs whose last step ran in the
	// interval, over its length; BacklogRuns the runs triggered and not
	// finished at its end.
	StepsPerSec float64 `json:"steps_per_sec"`
	BacklogRuns int64   `json:"backlog_runs"`
	// Step wait: QUEUED to STARTED of every step of a sample of the runs
	// triggered (read from the event log about a second later; a step not
	// started yet counts its wait so far). Run latency: the sampled runs'
	// first QUEUED to last COMPLETED.
	WaitP50Ms   float64 `json:"step_wait_p50_ms"`
	WaitP99Ms   float64 `json:"step_wait_p99_ms"`
	RunP50Ms    float64 `json:"run_p50_ms"`
	RunP99Ms    float64 `json:"run_p99_ms"`
	SampledRuns int     `json:"sampled_runs"`
	// DeadTuples is n_dead_tup summed over dagen's tables (and their
	// partitions) at the interval's end; AutovacuumRuns and
	// AutoanalyzeRuns how many autovacuums and autoanalyzes ran on them in
	// the interval, and VacuumRuns how many plain VACUUMs (the leader's,
	// where autovacuum is off).
	DeadTuples      int64 `json:"dead_tuples"`
	AutovacuumRuns  int64 `json:"autovacuum_runs"`
	VacuumRuns      int64 `json:"vacuum_runs"`
	AutoanalyzeRuns int64 `json:"autoanalyze_runs"`
	// TotalMB is every dagen table with its indexes and TOAST; Tables
	// and IndexesMB each of them, a partitioned one summed over its
	// partitions.
	TotalMB   float64             `json:"total_mb"`
	Tables    map[string]TableMB  `json:"tables"`
	IndexesMB map[string]float64  `json:"indexes_mb"`
	stats     map[string]relStats // cumulative counters, for the deltas
}

// TableMB is one table's size: heap with TOAST, and its indexes; and its
// dead tuples.
type TableMB struct {
	TableMB    float64 `json:"table_mb"`
	IndexMB    float64 `json:"index_mb"`
	DeadTuples int64   `json:"dead_tuples"`
}

// relStats are one table's cumulative vacuum counters.
type relStats struct{ autovacuum, autoanalyze, vacuum int64 }

// soakSample is a run whose event log is read for the latencies.
type soakSample struct {
	id dag.RunID
	at time.Time
}

// soak measures chain10's peak (unless -soak-rate), then triggers chain10
// runs at soakFraction of it for -soak-duration × -scale with Retention a
// minute, recording every interval (a minute × -scale).
func (b *bench) soak(ctx context.Context, res *Result) (err error) {
	rep := &SoakReport{RunsPerSec: b.o.soakRate, RetentionSec: soakRetention.Seconds()}
	res.Soak = rep
	if rep.RunsPerSec == 0 {
		fmt.Fprintf(b.log, "bench: soak: measuring chain10's peak ...\n")
		peak, err := b.soakPeak(ctx)
		if err != nil {
			return fmt.Errorf("measure chain10's peak: %w", err)
		}
		rep.PeakRunsPerSec = figures.Round(peak, 1)
		rep.RunsPerSec = figures.Round(soakFraction*peak, 1)
	}
	duration := time.Duration(float64(b.o.soakDuration) * b.o.scale)
	interval := min(duration, time.Duration(float64(time.Minute)*b.o.scale))
	rep.DurationSec, rep.IntervalSec = figures.Round(duration.Seconds(), 3), figures.Round(interval.Seconds(), 3)
	fmt.Fprintf(b.log, "bench: soak: %.1f chain10 runs/s (%.0f steps/s) for %s, a line every %s, Retention %s\n",
		rep.RunsPerSec, rep.RunsPerSec*chainSteps, duration, interval, soakRetention)

	w, err := b.newWorkerWith(ctx, func(c *engine.Config) { c.Retention = soakRetention })
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.stop(ctx)) }()
	base, err := b.soakStats(ctx)
	if err != nil {
		return err
	}
	win := b.startWindow(ctx)
	start := time.Now()
	if err := w.start(ctx); err != nil {
		return err
	}

	// Sample every every-th run: about soakSamples (× scale) a minute.
	perInterval := rep.RunsPerSec * interval.Seconds()
	wantSamples := max(soakMinSamples, b.scaled(soakSamples))
	every := max(1, int64(perInterval/float64(wantSamples)))
	var (
		triggered atomic.Int64
		mu        sync.Mutex
		pending   []soakSample
	)
	tctx, stopTriggers := context.WithCancel(ctx)
	defer stopTriggers()
	trigErr := make(chan error, 1)
	go func() {
		trigErr <- b.soakTrigger(tctx, w.e, rep.RunsPerSec, start, start.Add(duration), &triggered, func(i int64, id dag.RunID) {
			if i%every == 0 {
				mu.Lock()
				pending = append(pending, soakSample{id: id, at: time.Now()})
				mu.Unlock()
			}
		})
	}()

	lag := min(time.Second, interval/4)
	var allWaits []float64
	prev, prevDone, prevStats := start, int64(0), base
	for k := 1; ; k++ {
		end := start.Add(time.Duration(k) * interval)
		if end.Sub(start) > duration+time.Millisecond {
			break
		}
		if err := waitUntil(ctx, end, &trigErr); err != nil {
			return err
		}
		now := time.Now()
		done := w.probe.Done()
		m := SoakMinute{Minute: k, EndSec: figures.Round(now.Sub(start).Seconds(), 1),
			StepsPerSec: figures.Round(float64((done-prevDone)*chainSteps)/now.Sub(prev).Seconds(), 0),
			BacklogRuns: triggered.Load() - done}
		mu.Lock()
		var ready []soakSample
		ready, pending = splitSamples(pending, now.Add(-lag))
		mu.Unlock()
		waits, runs, err := b.soakLatencies(ctx, w.e, ready)
		if err != nil {
			return err
		}
		allWaits = append(allWaits, waits...)
		m.SampledRuns = len(ready)
		m.WaitP50Ms, m.WaitP99Ms = figures.Percentiles(waits)
		m.RunP50Ms, m.RunP99Ms = figures.Percentiles(runs)
		stats, err := b.soakStats(ctx)
		if err != nil {
			return err
		}
		m.fill(stats, prevStats)
		rep.Minutes = append(rep.Minutes, m)
		fmt.Fprintf(b.log, "bench: soak: %s\n", m.line())
		prev, prevDone, prevStats = now, done, stats
	}
	if trigErr != nil {
		if err := <-trigErr; err != nil {
			return err
		}
	}
	drainStart := time.Now()
	n := triggered.Load()
	if err := b.waitDrained(ctx, w.probe, n); err != nil {
		return err
	}
	rep.DrainSec = figures.Round(time.Since(drainStart).Seconds(), 3)
	win.stop(ctx, res, time.Since(start))
	res.Runs = int(n)
	res.Steps = int(n) * chainSteps
	if res.Seconds > 0 {
		res.StepsPerSec = figures.Round(float64(res.Steps)/res.Seconds, 0)
	}
	res.P50Ms, res.P99Ms = figures.Percentiles(allWaits)
	rep.judge(duration)
	res.Completed, err = b.checkNoneFailed(ctx, res.Runs)
	return err
}

// waitUntil waits until at, or returns the error the trigger loop ended
// with. The loop ends at the soak's end, the last interval's: once it has
// ended without error, *trigErr is set to nil and not read again.
func waitUntil(ctx context.Context, at time.Time, trigErr *chan error) error {
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case err := <-*trigErr:
			if err != nil {
				return err
			}
			*trigErr = nil
		case <-timer.C:
			return nil
		}
	}
}

// soakPeak measures chain10's peak in runs/s the way the soak loads the
// engine: runs triggered while it runs, every soakTick, as many as keep
// 2 × Concurrency runs in flight (enough to fill every slot, a chain
// having one step ready at a time). Once as many runs have finished (one
// turnover: the engine is past its start), the runs finished over
// soakPeakTime × scale (at least a second) give the rate. A drain of runs
// enqueued beforehand is no measure of it: its claims are full batches
// and its triggers big chunks, before the clock starts, and the rate it
// reaches (chain10's steps/s) is well above what the engine sustains while
// it also triggers, with claims as small as what became ready since the
// last.
func (b *bench) soakPeak(ctx context.Context) (rate float64, err error) {
	w, err := b.newWorkerWith(ctx, func(c *engine.Config) { c.Retention = soakRetention })
	if err != nil {
		return 0, err
	}
	defer func() {
		err = errors.Join(err, w.stop(ctx), b.truncate(context.WithoutCancel(ctx)))
	}()
	if err := w.start(ctx); err != nil {
		return 0, err
	}
	window := max(time.Second, time.Duration(float64(soakPeakTime)*b.o.scale))
	inFlight := int64(2 * b.o.concurrency)
	var triggered, doneAtStart int64
	var start, end time.Time
	t := time.NewTicker(soakTick)
	defer t.Stop()
	reqs := make([]engine.TriggerRequest, 0, triggerChunk)
	for {
		now, done := time.Now(), w.probe.Done()
		if start.IsZero() && done >= inFlight {
			start, end, doneAtStart = now, now.Add(window), done
		}
		if !start.IsZero() && !now.Before(end) {
			break
		}
		if n := min(inFlight-(triggered-done), triggerChunk); n > 0 {
			reqs = reqs[:0]
			for i := range n {
				reqs = append(reqs, engine.TriggerRequest{Workflow: chainName, Tenant: benchTenant, Input: flows.Chain{N: int(triggered + i)}})
			}
			if _, err := w.e.TriggerMany(ctx, reqs); err != nil {
				return 0, fmt.Errorf("trigger chain10 runs: %w", err)
			}
			triggered += n
		}
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-t.C:
		}
	}
	finished := w.probe.Done()
	rate = float64(finished-doneAtStart) / time.Since(start).Seconds()
	// Runs in flight at the end near the cap say the engine, not the
	// trigger loop, set the pace.
	fmt.Fprintf(b.log, "bench: soak: chain10 peak: %.0f runs/s (%.0f steps/s) over %s, runs triggered as others finish, up to %d in flight (%d at the end)\n",
		rate, rate*chainSteps, time.Since(start).Round(time.Millisecond), inFlight, triggered-finished)
	if finished == doneAtStart {
		return 0, errors.New("no chain10 run finished")
	}
	return rate, nil
}

// soakTrigger triggers chain10 runs at rate runs/s from start until end,
// catching up every soakTick (in one TriggerMany, chunked), and calls
// sampled with each run's number and id.
func (b *bench) soakTrigger(ctx context.Context, e *engine.Engine, rate float64, start, end time.Time, triggered *atomic.Int64, sampled func(int64, dag.RunID)) error {
	t := time.NewTicker(soakTick)
	defer t.Stop()
	reqs := make([]engine.TriggerRequest, 0, triggerChunk)
	for {
		now := time.Now()
		if !now.Before(end) {
			return nil
		}
		want := int64(rate * now.Sub(start).Seconds())
		for n := triggered.Load(); n < want; n = triggered.Load() {
			reqs = reqs[:0]
			for i := n; i < min(want, n+triggerChunk); i++ {
				reqs = append(reqs, engine.TriggerRequest{Workflow: chainName, Tenant: benchTenant, Input: flows.Chain{N: int(i)}})
			}
			ids, err := e.TriggerMany(ctx, reqs)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("trigger chain10 runs: %w", err)
			}
			for j, id := range ids {
				sampled(n+int64(j), id)
			}
			triggered.Add(int64(len(ids)))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// splitSamples returns the samples taken before cutoff and the rest.
func splitSamples(s []soakSample, cutoff time.Time) (ready, rest []soakSample) {
	i := sort.Search(len(s), func(i int) bool { return s[i].at.After(cutoff) })
	return s[:i:i], append([]soakSample(nil), s[i:]...)
}

// soakLatencies reads the sampled runs' event logs and returns the step
// waits (QUEUED to STARTED, or to now for a step not started) and the run
// latencies (first QUEUED to last COMPLETED, or to now), in ms. A run
// already pruned (it cannot be, read a second after its trigger, unless
// the backlog is over a minute) is skipped.
func (b *bench) soakLatencies(ctx context.Context, e *engine.Engine, samples []soakSample) (waits, runs []float64, err error) {
	for _, s := range samples {
		evs, err := e.Events(ctx, s.id)
		if err != nil {
			if errors.Is(err, store.ErrRunNotFound) {
				continue
			}
			return nil, nil, fmt.Errorf("events of run %s: %w", s.id, err)
		}
		w, r, ok := runWaits(evs, time.Now())
		if ok {
			waits = append(waits, w...)
			runs = append(runs, r)
		}
	}
	return waits, runs, nil
}

// runWaits returns, from one run's events, each queued step's wait in ms
// (QUEUED to its first STARTED, or to now) and the run's latency (first
// QUEUED to the last COMPLETED, or to now while a step is unfinished).
func runWaits(evs []store.Event, now time.Time) (waits []float64, run float64, ok bool) {
	type phase struct{ queued, started, completed time.Time }
	steps := map[string]*phase{}
	var order []string
	for _, ev := range evs {
		if ev.Step == "" {
			continue
		}
		p := steps[ev.Step]
		if p == nil {
			p = &phase{}
			steps[ev.Step] = p
			order = append(order, ev.Step)
		}
		switch {
		case ev.Type == store.EventQueued && p.queued.IsZero():
			p.queued = ev.At
		case ev.Type == store.EventStarted && p.started.IsZero():
			p.started = ev.At
		case ev.Type == store.EventCompleted:
			p.completed = ev.At
		}
	}
	var first, last time.Time
	unfinished := false
	for _, name := range order {
		p := steps[name]
		if p.queued.IsZero() {
			continue
		}
		if first.IsZero() || p.queued.Before(first) {
			first = p.queued
		}
		if p.started.IsZero() {
			waits = append(waits, figures.Ms(now.Sub(p.queued)))
		} else {
			waits = append(waits, figures.Ms(p.started.Sub(p.queued)))
		}
		if p.completed.IsZero() {
			unfinished = true
		} else if p.completed.After(last) {
			last = p.completed
		}
	}
	if first.IsZero() {
		return nil, 0, false
	}
	if unfinished || len(order) < chainSteps {
		last = now
	}
	return waits, figures.Ms(last.Sub(first)), true
}

// relationTree joins each relation c of pg_class to the relations t of its
// partition tree: itself and, when it is partitioned, its partitions
// (pg_partition_tree has no row for a table that is not partitioned).
const relationTree = "CROSS JOIN LATERAL (SELECT relid FROM pg_partition_tree(c.oid) UNION SELECT c.oid::regclass) t"

// soakStats reads every dagen table's size, indexes, dead tuples and
// vacuum counters. A partitioned table is summed over its partitions.
func (b *bench) soakStats(ctx context.Context) (SoakMinute, error) {
	m := SoakMinute{Tables: map[string]TableMB{}, IndexesMB: map[string]float64{}, stats: map[string]relStats{}}
	// The statistics view is read once (MATERIALIZED): joined as it is,
	// the planner read it again for every table, half a second a look.
	rows, err := b.pool.Query(ctx, `WITH s AS MATERIALIZED (
			SELECT relid, n_dead_tup, autovacuum_count, autoanalyze_count, vacuum_count
			FROM pg_stat_user_tables WHERE schemaname = current_schema()
		)
		SELECT c.relname,
			coalesce(sum(pg_table_size(t.relid)), 0)::bigint,
			coalesce(sum(pg_indexes_size(t.relid)), 0)::bigint,
			coalesce(sum(s.n_dead_tup), 0)::bigint,
			coalesce(sum(s.autovacuum_count), 0)::bigint,
			coalesce(sum(s.autoanalyze_count), 0)::bigint,
			coalesce(sum(s.vacuum_count), 0)::bigint
		FROM pg_class c
		`+relationTree+`
		LEFT JOIN s ON s.relid = t.relid
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
			AND NOT c.relispartition AND c.relname LIKE 'dagen\_%'
		GROUP BY c.relname`)
	if err != nil {
		return m, fmt.Errorf("read table sizes: %w", err)
	}
	var total int64
	for rows.Next() {
		var name string
		var table, index, dead, av, aa, vac int64
		if err := rows.Scan(&name, &table, &index, &dead, &av, &aa, &vac); err != nil {
			rows.Close()
			return m, fmt.Errorf("read table sizes: %w", err)
		}
		m.Tables[name] = TableMB{TableMB: mb(table), IndexMB: mb(index), DeadTuples: dead}
		m.stats[name] = relStats{autovacuum: av, autoanalyze: aa, vacuum: vac}
		m.DeadTuples += dead
		total += table + index
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return m, fmt.Errorf("read table sizes: %w", err)
	}
	m.TotalMB = mb(total)
	rows, err = b.pool.Query(ctx, `SELECT c.relname, coalesce(sum(pg_relation_size(t.relid)), 0)::bigint
		FROM pg_class c `+relationTree+`
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('i', 'I')
			AND NOT c.relispartition AND c.relname LIKE 'dagen\_%'
		GROUP BY c.relname`)
	if err != nil {
		return m, fmt.Errorf("read index sizes: %w", err)
	}
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			rows.Close()
			return m, fmt.Errorf("read index sizes: %w", err)
		}
		m.IndexesMB[name] = mb(size)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return m, fmt.Errorf("read index sizes: %w", err)
	}
	return m, nil
}

// fill copies the sizes of stats into m and sets the vacuum counts since
// prev.
func (m *SoakMinute) fill(stats, prev SoakMinute) {
	m.Tables, m.IndexesMB, m.stats = stats.Tables, stats.IndexesMB, stats.stats
	m.DeadTuples, m.TotalMB = stats.DeadTuples, stats.TotalMB
	for name, s := range stats.stats {
		p := prev.stats[name]
		m.AutovacuumRuns += max(0, s.autovacuum-p.autovacuum)
		m.AutoanalyzeRuns += max(0, s.autoanalyze-p.autoanalyze)
		m.VacuumRuns += max(0, s.vacuum-p.vacuum)
	}
}

// line is the interval as a person reads it: the figures, then the three
// largest tables.
func (m SoakMinute) line() string {
	names := make([]string, 0, len(m.Tables))
	for n := range m.Tables {
		names = append(names, n)
	}
	size := func(n string) float64 { return m.Tables[n].TableMB + m.Tables[n].IndexMB }
	sort.Slice(names, func(i, j int) bool { return size(names[i]) > size(names[j]) })
	var big []string
	for _, n := range names[:min(3, len(names))] {
		big = append(big, fmt.Sprintf("%s %.1f+%.1f", strings.TrimPrefix(n, "dagen_"), m.Tables[n].TableMB, m.Tables[n].IndexMB))
	}
	return fmt.Sprintf("interval %d (%.0fs): %.0f steps/s, backlog %d runs, step wait p50/p99 %.2f/%.2f ms, run p50/p99 %.1f/%.1f ms (%d runs sampled), dead tuples %d, autovacuum %d, autoanalyze %d, vacuum %d, size %.1f MB (%s MB table+index)",
		m.Minute, m.EndSec, m.StepsPerSec, m.BacklogRuns, m.WaitP50Ms, m.WaitP99Ms, m.RunP50Ms, m.RunP99Ms, m.SampledRuns,
		m.DeadTuples, m.AutovacuumRuns, m.AutoanalyzeRuns, m.VacuumRuns, m.TotalMB, strings.Join(big, ", "))
}

// judge sets the verdict: the last interval against the first for
// throughput and step wait p99, and, in a soak of soakSizeMin or more,
// the last interval's total size against the size at the end of minute
// soakSizeRef.
func (r *SoakReport) judge(duration time.Duration) {
	if len(r.Minutes) < 2 {
		r.Verdict = "not judged: fewer than two intervals"
		return
	}
	first, last := r.Minutes[0], r.Minutes[len(r.Minutes)-1]
	var missed []string
	if first.StepsPerSec > 0 {
		r.ThroughputRatio = figures.Round(last.StepsPerSec/first.StepsPerSec, 3)
	}
	if r.ThroughputRatio < soakMinThroughput {
		missed = append(missed, fmt.Sprintf("throughput %.2f of the first interval's (target >= %.2f)", r.ThroughputRatio, soakMinThroughput))
	}
	// A p99 under a tenth of a millisecond is the clock's grain: below it
	// the ratio says nothing.
	r.P99Ratio = figures.Round(math.Max(last.WaitP99Ms, 0.1)/math.Max(first.WaitP99Ms, 0.1), 3)
	if r.P99Ratio > soakMaxP99 {
		missed = append(missed, fmt.Sprintf("step wait p99 %.2fx the first interval's (target <= %.1f)", r.P99Ratio, soakMaxP99))
	}
	if duration >= soakSizeMin {
		for _, m := range r.Minutes {
			if m.EndSec >= soakSizeRef.Seconds()-1 && m.TotalMB > 0 {
				r.SizeRefMinute = m.Minute
				r.SizeRatio = figures.Round(last.TotalMB/m.TotalMB, 3)
				break
			}
		}
		if r.SizeRatio > soakMaxSize {
			missed = append(missed, fmt.Sprintf("tables %.2fx their size at minute %d (target <= %.1f)", r.SizeRatio, r.SizeRefMinute, soakMaxSize))
		}
	}
	r.Verdict = "meets"
	if len(missed) > 0 {
		r.Verdict = "MISSES: " + strings.Join(missed, "; ")
	}
}

// waitDrained waits until the probe has seen n runs' last steps and the
// store holds no unfinished run (finished runs may have been pruned, so
// they are not counted).
func (b *bench) waitDrained(ctx context.Context, probe *flows.Probe, n int64) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	lastMove, last := time.Now(), probe.Done()
	for {
		done := probe.Done()
		if done != last {
			last, lastMove = done, time.Now()
		}
		if done >= n || time.Since(lastMove) >= time.Second {
			var open int
			if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM dagen_runs WHERE finished_at IS NULL").Scan(&open); err != nil {
				return fmt.Errorf("count unfinished runs: %w", err)
			}
			if open == 0 && done >= n {
				return nil
			}
			lastMove = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d runs' last steps ran: %w", done, n, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// checkNoneFailed checks that no run in the store ended other than
// COMPLETED (the soak prunes, so the COMPLETED ones are not all there)
// and returns want.
func (b *bench) checkNoneFailed(ctx context.Context, want int) (int, error) {
	var bad int
	if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM dagen_runs WHERE status <> $1", string(store.RunCompleted)).Scan(&bad); err != nil {
		return 0, fmt.Errorf("count runs not completed: %w", err)
	}
	if bad > 0 {
		return want - bad, fmt.Errorf("%d runs did not complete", bad)
	}
	return want, nil
}

func mb(bytes int64) float64 { return figures.Round(float64(bytes)/(1<<20), 2) }
