package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dagenhq/dagen/examples/bench/layered"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestWorkloads runs every workload at a small scale on a schema of its
// own and checks behaviour, never timing: every run completed, figures are
// present, percentiles are ordered.
func TestWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres")
	}
	// Every workload, the soak included (it is not run by default): at
	// scale 0.01 its 5 minutes are 3 s, an interval every 0.6 s. All but
	// wide10k, which builds the generator and a program (TestWideSource
	// and package layered's tests check its parts).
	workloads := slices.DeleteFunc(slices.Clone(allWorkloads), func(w string) bool { return w == "wide10k" })
	o, err := parseFlags([]string{"-scale", "0.01", "-poll", "10ms", "-workloads", strings.Join(workloads, ","), "-soak-duration", "5m"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	o.databaseURL = pgtest.URL()
	o.schema = pgtest.Schema(t)
	o.manageSchema = false
	var out, log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, o, &out, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}

	results := map[string]Result{}
	for line := range strings.SplitSeq(out.String(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		if _, dup := results[r.Workload]; dup {
			t.Errorf("two JSON lines for %s", r.Workload)
		}
		results[r.Workload] = r
	}
	if len(results) != len(workloads) {
		t.Fatalf("got JSON lines for %d workloads, want %d:\n%s", len(results), len(workloads), out.String())
	}
	// The soak's runs follow its rate, measured: it has its own checks.
	sk := results["soak"]
	wantRuns := map[string]int{"single_step": 2500, "single_capped": 200, "single_limited": 2500, "single_flow": 2500, "chain10": 200, "fan50": 40, "map100k": 1, "map1k": 1, "trigger": 200, "trigger_key": 200, "fairness": fairWarmRuns + 1 + 1 + 200, "low_load": 2 * 10, "payload": 1, "soak": sk.Runs, "chain20": 100, "chain10_child": 100, "backlog1m": 10_000, "fairness1m": fairWarmRuns + 1 + 1}
	wantSteps := map[string]int{"single_step": 2500, "single_capped": 200, "single_limited": 2500, "single_flow": 2500, "chain10": 2000, "fan50": 2080, "map100k": 1002, "map1k": 1002, "trigger": 200, "trigger_key": 200, "low_load": 40, "payload": blobSteps, "soak": sk.Runs * chainSteps, "chain20": 2000, "chain10_child": 2000, "backlog1m": 10_000}
	for _, w := range workloads {
		r := results[w]
		if r.Peer != "dagen" || r.Runs != wantRuns[w] || r.Completed != r.Runs {
			t.Errorf("%s: peer %q, %d runs, %d completed; want dagen, %d, all", w, r.Peer, r.Runs, r.Completed, wantRuns[w])
		}
		if r.Steps != wantSteps[w] {
			t.Errorf("%s: %d steps, want %d", w, r.Steps, wantSteps[w])
		}
		if r.Seconds <= 0 || r.RSSMB < 0 || r.PGCPUSec < 0 || r.WorkerCPUSec < 0 || r.PGOwnCPUSec > r.PGCPUSec {
			t.Errorf("%s: implausible figures %+v", w, r)
		}
		if r.Concurrency != 64 || r.BatchSize != 64 || r.PollMs != 10 || r.GoMaxProcs < 1 {
			t.Errorf("%s: config not reported: %+v", w, r)
		}
	}
	for _, w := range []string{"single_step", "single_capped", "single_limited", "single_flow", "chain10", "fan50", "map100k", "map1k", "trigger", "trigger_key", "soak", "backlog1m"} {
		if r := results[w]; r.StepsPerSec <= 0 || r.CPUUsPerStep <= 0 {
			t.Errorf("%s: steps/s %v, CPU per step %v µs: want both > 0", w, r.StepsPerSec, r.CPUUsPerStep)
		}
	}
	ordered := func(name string, p50, p99 float64) {
		t.Helper()
		if p50 < 0 || p99 < p50 {
			t.Errorf("%s: p50 %v, p99 %v: want 0 <= p50 <= p99", name, p50, p99)
		}
	}
	c, f, l := results["chain10"], results["fairness"], results["low_load"]
	ordered("chain10", c.P50Ms, c.P99Ms)
	bl := results["backlog1m"]
	ordered("backlog1m claim start", bl.ClaimStartP50Ms, bl.ClaimStartP99Ms)
	ordered("backlog1m claim middle", bl.ClaimMidP50Ms, bl.ClaimMidP99Ms)
	ordered("backlog1m claim end", bl.ClaimEndP50Ms, bl.ClaimEndP99Ms)
	if bl.Tenants != 100 || bl.ClaimStartP99Ms <= 0 || bl.ClaimEndP99Ms <= 0 {
		t.Errorf("backlog1m: %d tenants, claim p99 %v ms at the start, %v at the end: want 100, both > 0", bl.Tenants, bl.ClaimStartP99Ms, bl.ClaimEndP99Ms)
	}
	ordered("fairness loaded", f.P50Ms, f.P99Ms)
	ordered("fairness idle", f.IdleP50Ms, f.IdleP99Ms)
	ordered("fairness queued", f.QueuedP50Ms, f.QueuedP99Ms)
	ordered("fairness trigger", f.TriggerP50Ms, f.TriggerP99Ms)
	ordered("fairness wait", f.WaitP50Ms, f.WaitP99Ms)
	if f.TriggerP99Ms <= 0 || f.WaitP99Ms <= 0 || f.TriggerP50Ms+f.WaitP50Ms > f.P99Ms+1 {
		t.Errorf("fairness: A's trigger %v/%v ms and wait %v/%v ms against its run %v/%v ms", f.TriggerP50Ms, f.TriggerP99Ms, f.WaitP50Ms, f.WaitP99Ms, f.P50Ms, f.P99Ms)
	}
	ordered("fairness commit idle", f.CommitIdleP50Ms, f.CommitIdleP99Ms)
	ordered("fairness commit loaded", f.CommitP50Ms, f.CommitP99Ms)
	ordered("low_load notify", l.P50Ms, l.P99Ms)
	ordered("low_load poll", l.PollP50Ms, l.PollP99Ms)
	if c.P99Ms <= 0 || f.IdleP99Ms <= 0 || f.P99Ms <= 0 || l.P99Ms <= 0 || l.PollP99Ms <= 0 {
		t.Errorf("latencies missing: chain10 %+v\nfairness %+v\nlow_load %+v", c, f, l)
	}
	if f.BRuns != 200 || f.UnderLoad < 0 || f.UnderLoad > 1 || f.P99Ratio <= 0 || f.CommitIdleP50Ms <= 0 || f.CommitP99Ratio <= 0 || f.AOverCommitP99 <= 0 {
		t.Errorf("fairness: %+v", f)
	}
	// B's steps that started while A's one step waited: at most all of B's.
	if f.BStepsP99 < 0 || f.BStepsMax < f.BStepsP99 || f.BStepsMax > f.BRuns {
		t.Errorf("fairness: B's steps before A's: max %d, p99 %d, of %d", f.BStepsMax, f.BStepsP99, f.BRuns)
	}
	// fairness1m: backlog1m's backlog (10,000 runs over 100 tenants at
	// this scale), not drained; A's runs judged alone.
	f1 := results["fairness1m"]
	ordered("fairness1m loaded", f1.P50Ms, f1.P99Ms)
	ordered("fairness1m idle", f1.IdleP50Ms, f1.IdleP99Ms)
	ordered("fairness1m commit loaded", f1.CommitP50Ms, f1.CommitP99Ms)
	if f1.BRuns != 10_000 || f1.Tenants != 100 || f1.BDoneRuns < 0 || f1.BDoneRuns > f1.BRuns || f1.AOverCommitP99 <= 0 || f1.BEnqueueSec <= 0 || f1.BDrainedSec != 0 {
		t.Errorf("fairness1m: %+v", f1)
	}
	if f1.BStepsP99 < 0 || f1.BStepsMax < f1.BStepsP99 || f1.BStepsMax > f1.BRuns {
		t.Errorf("fairness1m: the backlog's steps before A's: max %d, p99 %d, of %d", f1.BStepsMax, f1.BStepsP99, f1.BRuns)
	}
	checkSoak(t, sk)
	if p := results["payload"]; p.AllocMB < payloadBytes>>20 {
		t.Errorf("payload: %v MB allocated, less than its own %d MiB input", p.AllocMB, payloadBytes>>20)
	}
	// At scale 0.01 map100k's one run has 1,000 elements, and map1k has one
	// run of 1,000.
	for _, w := range []string{"map100k", "map1k"} {
		if r := results[w]; r.Elements != 1000 {
			t.Errorf("%s: %d elements, want 1000", w, r.Elements)
		}
	}
	for _, want := range []string{"map100k: 1 run(s) of 1000 elements", "of fan50's (target >= 0.8", "map1k: 1 run(s) of 1000 elements", "peak RSS",
		"workload", "single_step", "fairness: tenant A", "fairness: one single-row UPDATE", "low_load: step-to-step", "payload: one run of 7 steps, each reading its 20 MiB input",
		"fairness: A's loaded p99 / the probe's loaded p99", "target <= one claim batch, BatchSize 64", "fairness1m: A's loaded p99 / the probe's loaded p99", "soak: interval 5 (", "soak: chain10 at", "verdict: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// The saved output compares with River's, two runs in one round.
	dir := t.TempDir()
	dagenPath, riverPath := filepath.Join(dir, "dagen.txt"), filepath.Join(dir, "river.txt")
	writeFile(t, dagenPath, out.String())
	writeFile(t, riverPath, "river tuned: ...\n"+`{"peer":"river","workload":"single_step","jobs":20000,"jobs_per_sec":1000,"settings":"tuned"}`+"\n"+
		`{"peer":"river","workload":"single_step","jobs":20000,"jobs_per_sec":3000,"settings":"tuned"}`+"\n")
	var cmp bytes.Buffer
	if err := run(ctx, options{compare: dagenPath, riverJSON: riverPath}, &cmp, &log); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(cmp.String()), " ")
	for _, want := range []string{"single_step ÷ River single_step", "chain10 ÷ River", "fan50 ÷ River", "UNRELIABLE: round 1: River's runs differ by 200%",
		"dagen/DBOS not judged", "fairness (dagen: Concurrency 64, BatchSize 64", "soak: chain10 at", "low_load: step to step"} {
		if !strings.Contains(flat, want) {
			t.Errorf("comparison lacks %q:\n%s", want, cmp.String())
		}
	}
	// River's two runs count as their mean, 2000 jobs/s.
	wantRatio := fmt.Sprintf("%.2f", results["single_step"].StepsPerSec/2000)
	if !strings.Contains(flat, "single_step ÷ River single_step "+wantRatio) {
		t.Errorf("comparison does not divide by the mean of the round's River runs (want %s):\n%s", wantRatio, cmp.String())
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseFlagsRejectsBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-workloads", "nope"},
		{"-workloads", ","},
		{"-scale", "0"},
		{"-scale", "-1"},
		{"-scale", "NaN"},
		{"-concurrency", "0"},
		{"-poll", "0s"},
		{"-max-conns", "1"},
		{"-schema", "Bad-Name"},
		{"-schema", "x; DROP TABLE y"},
		{"-soak-duration", "0s"},
		{"-soak-rate", "-1"},
		{"-plan-cache-mode", "fast"},
		{"extra"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q) accepted it", args)
		}
	}
	o, err := parseFlags([]string{"-workloads", "fan50, chain10", "-scale", "0.05"}, &bytes.Buffer{})
	if err != nil || len(o.workloads) != 2 || o.workloads[0] != "fan50" || o.scale != 0.05 || !o.manageSchema {
		t.Errorf("parseFlags = %+v, %v", o, err)
	}
}

func TestCompareRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	empty, junk := filepath.Join(dir, "empty"), filepath.Join(dir, "junk")
	writeFile(t, empty, "")
	writeFile(t, junk, "{not json\n{\"peer\":\"river\"}\n")
	for _, c := range [][2]string{{empty, junk}, {junk, junk}, {filepath.Join(dir, "missing"), junk}} {
		if err := compareFiles(c[0], c[1], "", &bytes.Buffer{}); err == nil {
			t.Errorf("compareFiles(%s, %s) succeeded", c[0], c[1])
		}
	}
}

func TestStepToStep(t *testing.T) {
	t0 := time.Unix(1000, 0)
	evs := []store.Event{
		{At: t0, Step: "A", Type: store.EventStarted},
		{At: t0.Add(1 * time.Millisecond), Step: "A", Type: store.EventCompleted},
		{At: t0.Add(1 * time.Millisecond), Step: "B", Type: store.EventQueued},
		{At: t0.Add(4 * time.Millisecond), Step: "B", Type: store.EventStarted},
	}
	if d, ok := stepToStep(evs, "A", "B"); !ok || d != 3*time.Millisecond {
		t.Errorf("stepToStep = %v %v, want 3ms", d, ok)
	}
	if _, ok := stepToStep(evs[:2], "A", "B"); ok {
		t.Error("stepToStep without B STARTED is ok")
	}
}

// checkSoak checks the soak's report at test scale: 3 s in intervals of
// 0.6 s, every one with its figures.
func checkSoak(t *testing.T, r Result) {
	t.Helper()
	s := r.Soak
	if s == nil {
		t.Fatalf("soak: no report: %+v", r)
	}
	if s.PeakRunsPerSec <= 0 || s.RunsPerSec <= 0 || s.RunsPerSec > s.PeakRunsPerSec || s.IntervalSec != 0.6 || s.DurationSec != 3 || s.RetentionSec != 60 {
		t.Errorf("soak: rate and timing %+v", *s)
	}
	if len(s.Minutes) != 5 {
		t.Fatalf("soak: %d intervals, want 5: %+v", len(s.Minutes), *s)
	}
	for i, m := range s.Minutes {
		if m.Minute != i+1 || m.EndSec <= 0 || m.StepsPerSec < 0 || m.TotalMB <= 0 || m.DeadTuples < 0 || m.AutovacuumRuns < 0 || m.WaitP99Ms < m.WaitP50Ms || m.RunP99Ms < m.RunP50Ms {
			t.Errorf("soak: interval %d: %+v", i+1, m)
		}
		if _, ok := m.Tables["dagen_runs"]; !ok || len(m.IndexesMB) == 0 {
			t.Errorf("soak: interval %d lacks table or index sizes: %v %v", i+1, m.Tables, m.IndexesMB)
		}
	}
	// Under 5 minutes the sizes are not judged; the rest always is.
	if s.ThroughputRatio < 0 || s.P99Ratio <= 0 || s.SizeRefMinute != 0 || s.Verdict == "" {
		t.Errorf("soak: verdict %+v", *s)
	}
	if r.Completed != r.Runs || r.Runs == 0 || r.P99Ms < r.P50Ms {
		t.Errorf("soak: %d runs, %d completed, p50 %v p99 %v", r.Runs, r.Completed, r.P50Ms, r.P99Ms)
	}
}

// TestWideModule checks what wide10k writes before it runs the
// generator: the repository's root found from the working directory, and
// a throwaway module that replaces dagen by it and holds the workflow and
// the drain program (TestWorkloads leaves wide10k out: it builds).
func TestWideModule(t *testing.T) {
	root, err := repoRoot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "examples", "bench", "wide.go")); err != nil {
		t.Fatalf("repoRoot = %s, not this repository: %v", root, err)
	}
	dir := t.TempDir()
	shape := layered.Shape{Layers: 3, Width: 4}
	if err := writeWideModule(dir, root, shape); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(mod), "replace "+dagenModule+" => "+root+"\n") {
		t.Errorf("go.mod %q, %v: want a replace of dagen by %s", mod, err, root)
	}
	src, err := os.ReadFile(filepath.Join(dir, wideFlow, "flow.go"))
	if err != nil || strings.Count(string(src), "//dag:step") != shape.Steps() {
		t.Errorf("flow.go: %v, %d steps, want %d", err, strings.Count(string(src), "//dag:step"), shape.Steps())
	}
	for _, name := range []string{"go.sum", "main.go"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	if got := string(lastLine([]byte("building\n{\"a\":1}\n\n"))); got != `{"a":1}` {
		t.Errorf("lastLine = %q", got)
	}
}
