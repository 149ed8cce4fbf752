package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// printTable writes the results as a table a person reads.
func printTable(out io.Writer, results []Result) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\truns\tsteps\tseconds\tsteps/s\tp50 ms\tp99 ms\tRSS MB peak/now\tworker CPU s (%)\tof it GC s\tpostgres CPU s (%)\tof it our backends\tCPU µs/step\tsteal %\tpg buffers/step\tWAL records/step\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%s\t%s\t%s\t%.1f/%.1f\t%.2f (%.0f%%)\t%.2f\t%.2f (%.0f%%)\t%.2f (%.0f%%)\t%s\t%.1f\t%s\t%s\t\n",
			r.Workload, r.Runs, r.Steps, r.Seconds, opt(r.StepsPerSec, "%.0f"), opt(r.P50Ms, "%.2f"), opt(r.P99Ms, "%.2f"),
			r.RSSMB, r.RSSNowMB, r.WorkerCPUSec, r.WorkerCPUPct, r.WorkerGCCPUSec, r.PGCPUSec, r.PGCPUPct, r.PGOwnCPUSec, r.PGOwnCPUPct, opt(r.CPUUsPerStep, "%.1f"), r.StealPct,
			opt(r.PGBuffersPerStep, "%.1f"), opt(r.PGWALRecordsPerStep, "%.2f"))
	}
	_ = tw.Flush()
	var fan *Result
	for i := range results {
		if results[i].Workload == "fan50" {
			fan = &results[i]
		}
	}
	for _, r := range results {
		switch r.Workload {
		case "map100k", "map1k":
			fmt.Fprintf(out, "%s: %d run(s) of %d elements; steps count every element, Items and Collect%s\n", r.Workload, r.Runs, r.Elements, mapVerdict(r, fan))
		case "trigger", "trigger_key":
			fmt.Fprintf(out, "%s: %d runs started by one Trigger call each from %d goroutines (steps/s is runs/s; the runs are not executed)%s\n", r.Workload, r.Runs, triggerCallers, map[bool]string{true: ", each with a new idempotency key", false: ""}[r.Workload == "trigger_key"])
		case "single_capped":
			fmt.Fprintf(out, "single_capped: concurrency=1 per key over %d keys, all runs triggered up front%s\n", r.Keys, cappedVerdict(r, results))
		case "single_limited":
			fmt.Fprintf(out, "single_limited: single_step's runs, each step taking a token of a limit that never binds (100 keys)%s\n", ofSingle(r, results, limitedMinOfSingle))
		case "single_flow":
			fmt.Fprintf(out, "single_flow: single_step's runs with priorities 0-9 over four tenants of weights 1-4%s\n", ofSingle(r, results, 0))
		case "backlog1m":
			fmt.Fprintf(out, "backlog1m: %d single-step runs queued over %d tenants (Zipf), then drained%s; the claim p50/p99 %.2f/%.2f ms in the drain's first tenth, %.2f/%.2f ms in its middle, %.2f/%.2f ms in its last (end p99 / start p99 %.2f, target <= %.0f: %s)\n",
				r.Runs, r.Tenants, ofSingle(r, results, backlogMinOfSingle), r.ClaimStartP50Ms, r.ClaimStartP99Ms, r.ClaimMidP50Ms, r.ClaimMidP99Ms, r.ClaimEndP50Ms, r.ClaimEndP99Ms,
				r.ClaimEndP99Ms/max(r.ClaimStartP99Ms, 1e-9), float64(backlogMaxClaimGrowth), verdictAtMost(r.ClaimEndP99Ms/max(r.ClaimStartP99Ms, 1e-9), backlogMaxClaimGrowth))
		case "payload":
			fmt.Fprintf(out, "payload: one run of 7 steps, each reading its %d MiB input: peak RSS %.1f MB, %.1f MB allocated in all\n", payloadBytes>>20, r.RSSMB, r.AllocMB)
		case "chain10":
			fmt.Fprintf(out, "chain10: p50/p99 are run latencies (finished_at - created_at) of runs all enqueued before the engine started\n")
		case "fairness":
			fmt.Fprintf(out, "fairness: tenant A p50/p99 %.2f/%.2f ms idle, %.2f/%.2f ms while B's %d runs drain (%d of A's runs finished with B's backlog left); p99/idle p99 = %.2f\n",
				r.IdleP50Ms, r.IdleP99Ms, r.P50Ms, r.P99Ms, r.BRuns, r.UnderLoad, r.P99Ratio)
			fmt.Fprintf(out, "fairness: A under load: the trigger call p50/p99 %.2f/%.2f ms, then the wait for the result %.2f/%.2f ms; from the event log: QUEUED->STARTED p50/p99 %.2f/%.2f ms, STARTED->COMPLETED p50/p99 %.2f/%.2f ms\n",
				r.TriggerP50Ms, r.TriggerP99Ms, r.WaitP50Ms, r.WaitP99Ms, r.QueuedP50Ms, r.QueuedP99Ms, r.ClaimedP50Ms, r.ClaimedP99Ms)
			fmt.Fprintf(out, "fairness: one single-row UPDATE committing alone, before each of A's runs: p50/p99 %.2f/%.2f ms idle, %.2f/%.2f ms under load; p99/idle p99 = %.2f (A's runs commit twice each)\n",
				r.CommitIdleP50Ms, r.CommitIdleP99Ms, r.CommitP50Ms, r.CommitP99Ms, r.CommitP99Ratio)
			fmt.Fprintf(out, "fairness: A's loaded p99 / the probe's loaded p99 = %.2f (target <= %d: %s); B's steps started while one of A's waited: max %d, p99 %d (target <= one claim batch, BatchSize %d: %s)\n",
				r.AOverCommitP99, fairMaxOverCommit, verdictAtMost(r.AOverCommitP99, fairMaxOverCommit), r.BStepsMax, r.BStepsP99, r.BatchSize, verdictAtMost(float64(r.BStepsMax), float64(r.BatchSize)))
		case "fairness1m":
			fmt.Fprintf(out, "fairness1m: tenant A p50/p99 %.2f/%.2f ms idle, %.2f/%.2f ms behind a backlog of %d runs over %d tenants (Zipf; enqueued in %.1fs, %d of them finished during A's %.1fs of loaded runs); the commit probe's loaded p50/p99 %.2f/%.2f ms\n",
				r.IdleP50Ms, r.IdleP99Ms, r.P50Ms, r.P99Ms, r.BRuns, r.Tenants, r.BEnqueueSec, r.BDoneRuns, r.ALoadedSec, r.CommitP50Ms, r.CommitP99Ms)
			fmt.Fprintf(out, "fairness1m: A under load: QUEUED->STARTED p50/p99 %.2f/%.2f ms, STARTED->COMPLETED p50/p99 %.2f/%.2f ms\n",
				r.QueuedP50Ms, r.QueuedP99Ms, r.ClaimedP50Ms, r.ClaimedP99Ms)
			fmt.Fprintf(out, "fairness1m: A's loaded p99 / the probe's loaded p99 = %.2f (target <= %d: %s); the backlog's steps started while one of A's waited: max %d, p99 %d (target <= one claim batch, BatchSize %d: %s)\n",
				r.AOverCommitP99, fairMaxOverCommit, verdictAtMost(r.AOverCommitP99, fairMaxOverCommit), r.BStepsMax, r.BStepsP99, r.BatchSize, verdictAtMost(float64(r.BStepsMax), float64(r.BatchSize)))
		case "wide10k":
			fmt.Fprintf(out, "wide10k: one run of %d layers of %d steps (%d steps, %d KiB generated): generate %.2fs + build %.2fs = %.2fs (target <= %ds: %s); the drain %.0f steps/s%s; the drain program's peak RSS %.1f MB (target <= %d MB: %s)\n",
				r.Layers, r.Width, r.Steps, r.GeneratedKiB, r.GenerateSec, r.BuildSec, r.GenerateSec+r.BuildSec, wideMaxGenBuildSec, verdictAtMost(r.GenerateSec+r.BuildSec, wideMaxGenBuildSec),
				r.StepsPerSec, ofFan(r, fan, wideMinOfFan), r.RSSMB, wideMaxRSSMB, verdictAtMost(r.RSSMB, wideMaxRSSMB))
		case "soak":
			for _, m := range r.Soak.Minutes {
				fmt.Fprintf(out, "soak: %s\n", m.line())
			}
			printSoakReport(out, r.Soak)
		case "low_load":
			fmt.Fprintf(out, "low_load: step-to-step through the queue (B STARTED - A COMPLETED) p50/p99 %.2f/%.2f ms with notifications, %.2f/%.2f ms polling alone (every %.0f ms); 10ms ticks missed: %d\n",
				r.P50Ms, r.P99Ms, r.PollP50Ms, r.PollP99Ms, r.PollMs, r.MissedTicks)
		}
	}
	fmt.Fprintf(out, "engine: Concurrency %d, BatchSize %d, PollInterval %.0fms, pool %d conns; postgres CPU counts every postgres process on this machine (other users included), \"our backends\" the connections of this benchmark; steal is CPU time the host gave to other machines; pg buffers and WAL records are the server's counts (every database), a step's work where CPU time is noisy\n",
		results[0].Concurrency, results[0].BatchSize, results[0].PollMs, results[0].MaxConns)
	if r := results[0]; r.Shards > 0 {
		fmt.Fprintf(out, "sharded: %d shard databases (a pool of %d conns each), runs spread over %d tenants\n", r.Shards, r.MaxConns, max(1, r.Tenants))
	}
	for _, r := range results {
		if r.StealPct > stealWarnPct {
			fmt.Fprintf(out, "WARNING: %s lost %.1f%% of the machine's CPU to its host (steal): its figures are not comparable; run it again\n", r.Workload, r.StealPct)
		}
	}
}

// The targets of the map workloads: steps/s against fan50's in the same
// run, and map100k's peak RSS.
const (
	mapMinOfFan = 0.8
	mapMaxRSSMB = 150
)

// mapVerdict compares a map workload with its targets: fan50's steps/s in
// the same results (when fan50 ran), and for map100k the peak RSS.
func mapVerdict(r Result, fan *Result) string {
	var v string
	if fan != nil && fan.StepsPerSec > 0 {
		ratio := r.StepsPerSec / fan.StepsPerSec
		verdict := "meets"
		if ratio < mapMinOfFan {
			verdict = "BELOW"
		}
		v += fmt.Sprintf("; steps/s %.2f of fan50's (target >= %.1f: %s)", ratio, mapMinOfFan, verdict)
	}
	if r.Workload == "map100k" {
		verdict := "meets"
		if r.RSSMB >= mapMaxRSSMB {
			verdict = "ABOVE"
		}
		v += fmt.Sprintf("; peak RSS %.1f MB (target < %d MB: %s)", r.RSSMB, mapMaxRSSMB, verdict)
	}
	return v
}

func opt(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// writeJSON writes one JSON line per result to out and, when path is set,
// to that file too.
func writeJSON(out io.Writer, path string, results []Result) error {
	var lines strings.Builder
	for _, r := range results {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode %s result: %w", r.Workload, err)
		}
		lines.Write(b)
		lines.WriteByte('\n')
	}
	if _, err := io.WriteString(out, lines.String()); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if path != "" {
		if err := os.WriteFile(path, []byte(lines.String()), 0o644); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
	}
	return nil
}

// cappedMinOfSingle is the target of single_capped: steps/s against
// single_step's in the same run.
const cappedMinOfSingle = 0.8

// cappedVerdict compares single_capped with single_step in the same
// results, when it ran: steps/s while the engine drains (the window of
// every throughput workload), and runs/s from the first trigger to the last
// completion. The target is judged on the second: a capped run's roots are
// queued when it is admitted, inside the window, where an uncapped run's
// are queued by its trigger, before it.
func cappedVerdict(r Result, results []Result) string {
	for _, s := range results {
		if s.Workload == "single_step" && s.StepsPerSec > 0 && r.Seconds > 0 {
			drain := r.StepsPerSec / s.StepsPerSec
			whole := wholeRunsPerSec(r.Runs, r.TriggerSeconds, r.Seconds) / wholeRunsPerSec(s.Runs, s.TriggerSeconds, s.Seconds)
			verdict := "meets"
			if whole < cappedMinOfSingle {
				verdict = "BELOW"
			}
			return fmt.Sprintf("; draining, steps/s %.2f of single_step's; triggers and drain together (%.2fs + %.2fs against %.2fs + %.2fs), runs/s %.2f of single_step's (target >= %.1f: %s)",
				drain, r.TriggerSeconds, r.Seconds, s.TriggerSeconds, s.Seconds, whole, cappedMinOfSingle, verdict)
		}
	}
	return ""
}

// wholeRunsPerSec is a workload's runs a second from its first trigger to
// its last completion.
func wholeRunsPerSec(runs int, triggerSec, drainSec float64) float64 {
	return float64(runs) / (triggerSec + drainSec)
}

// limitedMinOfSingle is the target of single_limited: steps/s against
// single_step's in the same run.
const limitedMinOfSingle = 0.9

// ofSingle compares a variant of single_step with single_step in the same
// results, when it ran: steps/s and CPU per step, against a target of
// steps/s when min is above zero.
func ofSingle(r Result, results []Result, min float64) string {
	for _, s := range results {
		if s.Workload != "single_step" || s.StepsPerSec <= 0 || s.CPUUsPerStep <= 0 {
			continue
		}
		ratio := r.StepsPerSec / s.StepsPerSec
		out := fmt.Sprintf("; steps/s %.2f of single_step's, CPU per step %.2f of its", ratio, r.CPUUsPerStep/s.CPUUsPerStep)
		if min > 0 {
			verdict := "meets"
			if ratio < min {
				verdict = "BELOW"
			}
			out += fmt.Sprintf(" (target >= %.1f: %s)", min, verdict)
		}
		return out
	}
	return ""
}

// The targets of backlog1m: steps/s against single_step's in the same
// run, and the claim's p99 at the end of the drain against its start.
const (
	backlogMinOfSingle    = 0.8
	backlogMaxClaimGrowth = 2
)

// The targets of wide10k: the generator and go build together, the
// drain's steps/s against fan50's in the same run, and the drain
// program's peak RSS.
const (
	wideMaxGenBuildSec = 30
	wideMinOfFan       = 0.8
	wideMaxRSSMB       = 128
)

// ofFan compares r's steps/s with fan50's in the same results, when it
// ran, against a target of min.
func ofFan(r Result, fan *Result, min float64) string {
	if fan == nil || fan.StepsPerSec <= 0 {
		return ""
	}
	ratio := r.StepsPerSec / fan.StepsPerSec
	verdict := "meets"
	if ratio < min {
		verdict = "BELOW"
	}
	return fmt.Sprintf(", %.2f of fan50's (target >= %.1f: %s)", ratio, min, verdict)
}
