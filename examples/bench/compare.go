package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// stealWarnPct is the CPU steal past which a result is flagged.
const stealWarnPct = 5

// driftWarn is how much several River runs in one round may differ
// (fastest ÷ slowest − 1) before that round's ratios are flagged.
const driftWarn = 0.2

// throughputWorkloads are the workloads make bench runs in every round.
var throughputWorkloads = []string{"single_step", "chain10", "fan50"}

// target is a dagen/peer throughput ratio the benchmark aims for.
type target struct {
	workload string
	min      float64
}

// riverTargets: dagen steps/s ÷ River's single_step jobs/s (River -settings
// tuned), for each of dagen's throughput workloads.
var riverTargets = []target{{"single_step", 1.5}, {"chain10", 1.5}, {"fan50", 1.2}}

// dbosTargets: dagen steps/s ÷ DBOS's steps/s in the same workload.
var dbosTargets = []target{{"single_step", 10}, {"chain10", 10}, {"fan50", 10}}

// cpuMaxOfRiver is the target of dagen's CPU a step, against River's CPU
// a job, in each throughput workload.
const cpuMaxOfRiver = 0.8

// The fairness targets: A's loaded p99 over the commit probe's, and B's
// steps started while one of A's waited, against one claim batch.
const fairMaxOverCommit = 3

// line is what the comparison reads of any peer's JSON line (dagen's,
// River's, DBOS's: they share these names), with dagen's whole Result
// when it is dagen's.
type line struct {
	Peer         string  `json:"peer"`
	Workload     string  `json:"workload"`
	Jobs         int     `json:"jobs"`
	Runs         int     `json:"runs"`
	Steps        int     `json:"steps"`
	Seconds      float64 `json:"seconds"`
	TriggerSec   float64 `json:"trigger_seconds"`
	StepsPerSec  float64 `json:"steps_per_sec"`
	JobsPerSec   float64 `json:"jobs_per_sec"`
	WorkerCPUSec float64 `json:"worker_cpu_s"`
	PGCPUSec     float64 `json:"pg_cpu_s"`
	CPUUsPerStep float64 `json:"cpu_us_per_step"`
	RSSMB        float64 `json:"rss_mb"`
	TriggerRSSMB float64 `json:"trigger_rss_mb"`
	StealPct     float64 `json:"steal_pct"`
	Settings     string  `json:"settings"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	IdleP50Ms    float64 `json:"idle_p50_ms"`
	IdleP99Ms    float64 `json:"idle_p99_ms"`
	BRuns        int     `json:"b_runs"`

	dagen *Result
}

// rate is the line's throughput: steps/s, or jobs/s for River's older
// lines that have no steps_per_sec.
func (l line) rate() float64 {
	if l.StepsPerSec > 0 {
		return l.StepsPerSec
	}
	return l.JobsPerSec
}

// cpuPerStep is the worker's and Postgres's CPU a step in µs, as the line
// says or from its CPU seconds and steps; 0 when unknown.
func (l line) cpuPerStep() float64 {
	if l.CPUUsPerStep > 0 {
		return l.CPUUsPerStep
	}
	steps := l.Steps
	if steps == 0 {
		steps = l.Jobs
	}
	if steps > 0 && l.WorkerCPUSec+l.PGCPUSec > 0 {
		return 1e6 * (l.WorkerCPUSec + l.PGCPUSec) / float64(steps)
	}
	return 0
}

// benchSet is what a comparison reads: rounds, each the lines of one
// round of every peer (make bench runs River, DBOS and dagen's throughput
// workloads in each), and the lines run once (latency workloads, the
// soak, fairness of the peers).
type benchSet struct {
	source string
	rounds [][]line
	once   []line
}

// find returns the lines of peer and workload in lines.
func find(lines []line, peer, workload string) []line {
	var out []line
	for _, l := range lines {
		if l.Peer == peer && l.Workload == workload {
			out = append(out, l)
		}
	}
	return out
}

// last returns the last line of peer and workload anywhere in the set:
// the once lines first, then the rounds'.
func (s benchSet) last(peer, workload string) (line, bool) {
	if ls := find(s.once, peer, workload); len(ls) > 0 {
		return ls[len(ls)-1], true
	}
	for i := len(s.rounds) - 1; i >= 0; i-- {
		if ls := find(s.rounds[i], peer, workload); len(ls) > 0 {
			return ls[len(ls)-1], true
		}
	}
	return line{}, false
}

// jsonLines calls fn with every line of path that is a JSON object; the
// rest is human text, skipped.
func jsonLines(path string, fn func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(l, "{") {
			continue
		}
		if err := fn([]byte(l)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// readLines returns the peer lines of the files: JSON objects with a peer
// and a workload. Lines that are not are skipped.
func readLines(paths ...string) ([]line, error) {
	var out []line
	for _, p := range paths {
		err := jsonLines(p, func(b []byte) error {
			var l line
			if json.Unmarshal(b, &l) != nil || l.Peer == "" || l.Workload == "" {
				return nil
			}
			if l.Peer == "dagen" {
				var r Result
				if json.Unmarshal(b, &r) == nil {
					l.dagen = &r
				}
			}
			out = append(out, l)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
	}
	return out, nil
}

// readDir reads make bench's output directory: every file in a
// subdirectory round-N is round N's, every file directly in dir is run
// once.
func readDir(dir string) (benchSet, error) {
	set := benchSet{source: dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return set, fmt.Errorf("results: %w", err)
	}
	type numbered struct {
		n    int
		path string
	}
	var rounds []numbered
	var once []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "round-")); err == nil && strings.HasPrefix(e.Name(), "round-") {
				rounds = append(rounds, numbered{n, p})
			}
			continue
		}
		once = append(once, p)
	}
	sort.Slice(rounds, func(i, j int) bool { return rounds[i].n < rounds[j].n })
	for _, r := range rounds {
		files, err := filepath.Glob(filepath.Join(r.path, "*"))
		if err != nil {
			return set, fmt.Errorf("results: %w", err)
		}
		ls, err := readLines(files...)
		if err != nil {
			return set, err
		}
		set.rounds = append(set.rounds, ls)
	}
	if set.once, err = readLines(once...); err != nil {
		return set, err
	}
	return set, nil
}

// readSet reads what -compare names: make bench's output directory, or
// comma-separated dagen outputs, one a round, with River's and DBOS's
// outputs (comma-separated too, one a round in the same order, or one
// for all).
func readSet(compare, riverJSON, dbosJSON string) (benchSet, error) {
	if fi, err := os.Stat(compare); err == nil && fi.IsDir() {
		if riverJSON != "" || dbosJSON != "" {
			return benchSet{}, errors.New("-compare with a directory reads the peers' outputs from it: no -river-json or -dbos-json")
		}
		return readDir(compare)
	}
	dagen := splitList(compare)
	set := benchSet{source: compare}
	for _, p := range dagen {
		ls, err := readLines(p)
		if err != nil {
			return set, err
		}
		set.rounds = append(set.rounds, ls)
	}
	for _, peer := range []struct{ flag, list string }{{"-river-json", riverJSON}, {"-dbos-json", dbosJSON}} {
		files := splitList(peer.list)
		switch {
		case len(files) == 0:
		case len(files) == len(set.rounds):
			for i, p := range files {
				ls, err := readLines(p)
				if err != nil {
					return set, err
				}
				set.rounds[i] = append(set.rounds[i], ls...)
			}
		case len(files) == 1:
			ls, err := readLines(files[0])
			if err != nil {
				return set, err
			}
			for i := range set.rounds {
				set.rounds[i] = append(set.rounds[i], ls...)
			}
		default:
			return set, fmt.Errorf("%s names %d files for %d -compare files: want one a round, or one", peer.flag, len(files), len(set.rounds))
		}
	}
	return set, nil
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// spread is a median with the smallest and largest value, over n values.
type spread struct {
	med, lo, hi float64
	n           int
}

// summarize returns the median (the mean of the middle two for an even
// count), min and max of xs.
func summarize(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := len(s) / 2
	med := s[m]
	if len(s)%2 == 0 {
		med = (s[m-1] + s[m]) / 2
	}
	return spread{med: med, lo: s[0], hi: s[len(s)-1], n: len(s)}
}

// format writes the spread with verb, e.g. "%.0f": "median [min–max]", the
// median alone over one value, "-" over none.
func (s spread) format(verb string) string {
	switch s.n {
	case 0:
		return "-"
	case 1:
		return fmt.Sprintf(verb, s.med)
	}
	return fmt.Sprintf(verb+" ["+verb+"–"+verb+"]", s.med, s.lo, s.hi)
}

// roundFigure is one peer's figure in one round: the mean of its lines of
// the workload there (River once ran twice a round), the most steal of
// them, and how far apart they were (fastest ÷ slowest − 1).
type roundFigure struct {
	rate, cpu, steal, drift float64
	ok                      bool
}

func figure(lines []line, peer, workload string) roundFigure {
	var f roundFigure
	var rates, cpus []float64
	for _, l := range find(lines, peer, workload) {
		if l.rate() <= 0 {
			continue
		}
		rates = append(rates, l.rate())
		if c := l.cpuPerStep(); c > 0 {
			cpus = append(cpus, c)
		}
		f.steal = math.Max(f.steal, l.StealPct)
	}
	if len(rates) == 0 {
		return f
	}
	f.ok = true
	f.rate = mean(rates)
	if len(cpus) > 0 {
		f.cpu = mean(cpus)
	}
	lo, hi := slicesMinMax(rates)
	f.drift = hi/lo - 1
	return f
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func slicesMinMax(xs []float64) (lo, hi float64) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// peerFigures returns peer's figure of workload in every round (the
// zero figure where it did not run).
func (s benchSet) peerFigures(peer, workload string) []roundFigure {
	out := make([]roundFigure, len(s.rounds))
	for i, r := range s.rounds {
		out[i] = figure(r, peer, workload)
	}
	return out
}

// rates and cpus gather the figures that are there.
func rates(fs []roundFigure) []float64 {
	var out []float64
	for _, f := range fs {
		if f.ok {
			out = append(out, f.rate)
		}
	}
	return out
}

func cpus(fs []roundFigure) []float64 {
	var out []float64
	for _, f := range fs {
		if f.ok && f.cpu > 0 {
			out = append(out, f.cpu)
		}
	}
	return out
}

// ratio is a paired dagen/peer ratio over the rounds.
type ratio struct {
	spread
	each    []float64 // each round's ratio
	flagged []string  // why some rounds are not to be trusted
}

// pairedRatio divides each round's dagen figure by the same round's peer
// figure, in the rounds that have both.
func pairedRatio(dagen, peer []roundFigure, peerName string) ratio {
	var r ratio
	for i := range dagen {
		d, p := dagen[i], peer[i]
		if !d.ok || !p.ok || p.rate <= 0 {
			continue
		}
		r.each = append(r.each, d.rate/p.rate)
		if d.steal > stealWarnPct || p.steal > stealWarnPct {
			r.flagged = append(r.flagged, fmt.Sprintf("round %d: CPU steal %.1f%% (dagen), %.1f%% (%s)", i+1, d.steal, p.steal, peerName))
		}
		if p.drift > driftWarn {
			r.flagged = append(r.flagged, fmt.Sprintf("round %d: %s's runs differ by %.0f%%", i+1, peerName, 100*p.drift))
		}
	}
	r.spread = summarize(r.each)
	return r
}

// cappedRatio is single_capped ÷ single_step in each round that ran both:
// runs/s from the first trigger to the last completion (see
// cappedVerdict).
func (s benchSet) cappedRatio() ratio {
	var r ratio
	for _, round := range s.rounds {
		single, capped := find(round, "dagen", "single_step"), find(round, "dagen", "single_capped")
		if len(single) == 0 || len(capped) == 0 {
			continue
		}
		c, sg := capped[0], single[0]
		if c.Runs <= 0 || sg.Runs <= 0 || c.TriggerSec+c.Seconds <= 0 || sg.TriggerSec+sg.Seconds <= 0 {
			continue // an older line, without the runs and trigger time
		}
		r.each = append(r.each, wholeRunsPerSec(c.Runs, c.TriggerSec, c.Seconds)/wholeRunsPerSec(sg.Runs, sg.TriggerSec, sg.Seconds))
	}
	r.spread = summarize(r.each)
	return r
}

// verdict is the ratio's verdict: its median against min, how many rounds
// meet it, and the flags.
func (r ratio) verdict(min float64) string {
	if r.n == 0 {
		return "not judged"
	}
	v := "meets"
	if r.med < min {
		v = "BELOW"
	}
	meets := 0
	for _, x := range r.each {
		if x >= min {
			meets++
		}
	}
	v += fmt.Sprintf(" (%d of %d rounds meet)", meets, r.n)
	if len(r.flagged) > 0 {
		v += "; UNRELIABLE: " + strings.Join(r.flagged, "; ")
	}
	return v
}

// compare prints the comparison of the set and returns how many dagen
// throughput figures it had.
func compare(out io.Writer, s benchSet) int {
	riverRounds, dbosRounds := 0, 0
	for _, r := range s.rounds {
		if figure(r, "river", "single_step").ok {
			riverRounds++
		}
		for _, w := range throughputWorkloads {
			if figure(r, "dbos", w).ok {
				dbosRounds++
				break
			}
		}
	}
	fmt.Fprintf(out, "comparison of %s: %d round(s); River's single_step in %d, DBOS in %d", s.source, len(s.rounds), riverRounds, dbosRounds)
	if dbosRounds == 0 {
		fmt.Fprint(out, " (no DBOS output: bench/dbos absent or not run; dagen/DBOS not judged)")
	}
	fmt.Fprintln(out)

	dagenFigs := map[string][]roundFigure{}
	n := 0
	for _, w := range throughputWorkloads {
		dagenFigs[w] = s.peerFigures("dagen", w)
		n += len(rates(dagenFigs[w]))
	}
	river := s.peerFigures("river", "single_step")

	fmt.Fprintln(out, "\nthroughput, median [min–max] over the rounds:")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  workload\tdagen steps/s\tRiver jobs/s (its single_step)\tDBOS steps/s\t")
	for _, w := range throughputWorkloads {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", w, summarize(rates(dagenFigs[w])).format("%.0f"),
			summarize(rates(river)).format("%.0f"), summarize(rates(s.peerFigures("dbos", w))).format("%.0f"))
	}
	_ = tw.Flush()

	fmt.Fprintln(out, "\ndagen ÷ peer, paired (each round's dagen over the same round's peer), median [min–max]:")
	for _, t := range riverTargets {
		r := pairedRatio(dagenFigs[t.workload], river, "River")
		fmt.Fprintf(out, "  %-12s ÷ River single_step  %-22s target >= %.1f: %s\n", t.workload, r.format("%.2f"), t.min, r.verdict(t.min))
	}
	for _, t := range dbosTargets {
		r := pairedRatio(dagenFigs[t.workload], s.peerFigures("dbos", t.workload), "DBOS")
		fmt.Fprintf(out, "  %-12s ÷ DBOS %-13s %-22s target >= %.0f: %s\n", t.workload, t.workload, r.format("%.1f"), t.min, r.verdict(t.min))
	}

	if r := s.cappedRatio(); r.n > 0 {
		fmt.Fprintf(out, "  %-12s ÷ single_step, runs/s with triggers %-22s target >= %.1f: %s\n", "single_capped", r.format("%.2f"), cappedMinOfSingle, r.verdict(cappedMinOfSingle))
	}

	fmt.Fprintf(out, "\nCPU per step, this process + every postgres process, µs, median [min–max]; target: dagen's <= %.1fx River's CPU per job:\n", cpuMaxOfRiver)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  workload\tdagen\tRiver (its single_step)\tDBOS\tverdict\t")
	riverCPU := summarize(cpus(river))
	for _, w := range throughputWorkloads {
		d := summarize(cpus(dagenFigs[w]))
		v := "not judged"
		if d.n > 0 && riverCPU.n > 0 {
			v = "meets"
			if d.med > cpuMaxOfRiver*riverCPU.med {
				v = "ABOVE"
			}
			v += fmt.Sprintf(" (%.2fx River's)", d.med/riverCPU.med)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", w, d.format("%.1f"), riverCPU.format("%.1f"),
			summarize(cpus(s.peerFigures("dbos", w))).format("%.1f"), v)
	}
	_ = tw.Flush()

	s.printRSS(out)
	s.printMapped(out, dagenFigs["fan50"])
	s.printFairness(out)
	s.printLowLoad(out)
	s.printSoak(out)
	return n
}

// workerMaxRSSMB is the target for the worker's peak RSS in every
// throughput workload (at Concurrency 2048).
const workerMaxRSSMB = 64

// printRSS judges dagen's peak RSS in the throughput workloads, measured
// from the engine's start, with the trigger phase's beside it.
func (s benchSet) printRSS(out io.Writer) {
	fmt.Fprintf(out, "\nworker peak RSS, MB, from the engine's start (the trigger phase's apart), median [min–max]; target <= %d MB:\n", workerMaxRSSMB)
	for _, w := range throughputWorkloads {
		var rss, trig []float64
		for _, r := range s.rounds {
			for _, l := range find(r, "dagen", w) {
				rss, trig = append(rss, l.RSSMB), append(trig, l.TriggerRSSMB)
			}
		}
		if len(rss) == 0 {
			continue
		}
		sum := summarize(rss)
		fmt.Fprintf(out, "  %-12s %-22s trigger phase %-22s %s\n", w, sum.format("%.1f"), summarize(trig).format("%.1f"), verdictAtMost(sum.med, workerMaxRSSMB))
	}
}

// printMapped judges the mapped workloads, when they ran, against the
// median of fan50 over the rounds.
func (s benchSet) printMapped(out io.Writer, fan []roundFigure) {
	f := summarize(rates(fan))
	for _, w := range []string{"map100k", "map1k"} {
		l, ok := s.last("dagen", w)
		if !ok || l.dagen == nil {
			continue
		}
		var fanRes *Result
		if f.n > 0 {
			fanRes = &Result{StepsPerSec: f.med}
		}
		fmt.Fprintf(out, "\n%s: %.0f steps/s against fan50's median%s", w, l.StepsPerSec, mapVerdict(*l.dagen, fanRes))
	}
	if _, ok := s.last("dagen", "map100k"); ok {
		fmt.Fprintln(out)
	} else if _, ok := s.last("dagen", "map1k"); ok {
		fmt.Fprintln(out)
	}
}

// printFairness prints dagen's fairness against its targets and A's p99
// against River's and DBOS's under the same backlog. The ratio target is
// judged on the median of every fairness run in the set (make bench runs
// five): one run's second-worst of 100 moves more between runs than
// between versions.
func (s benchSet) printFairness(out io.Writer) {
	lines := find(s.once, "dagen", "fairness")
	if len(lines) == 0 { // outputs compared as files, not make bench's directory
		for _, round := range s.rounds {
			lines = append(lines, find(round, "dagen", "fairness")...)
		}
	}
	var runs []*Result
	for _, l := range lines {
		if l.dagen != nil {
			runs = append(runs, l.dagen)
		}
	}
	if len(runs) == 0 {
		return
	}
	r := runs[len(runs)-1]
	fmt.Fprintf(out, "\nfairness (dagen: Concurrency %d, BatchSize %d; B's backlog %d runs; A's %d runs one at a time; %d run(s)):\n",
		r.Concurrency, r.BatchSize, r.BRuns, (r.Runs-r.BRuns-fairWarmRuns)/2, len(runs))
	var ratios, idle, loaded []float64
	bMax, bP99 := 0, 0
	for i, f := range runs {
		idle, loaded = append(idle, f.IdleP99Ms), append(loaded, f.P99Ms)
		if f.CommitP99Ms > 0 {
			ratio := f.P99Ms / f.CommitP99Ms
			ratios = append(ratios, ratio)
			fmt.Fprintf(out, "  run %d: A's loaded p99 %.2f ms ÷ the commit probe's loaded p99 %.2f ms = %.2f\n", i+1, f.P99Ms, f.CommitP99Ms, ratio)
		}
		bMax, bP99 = max(bMax, f.BStepsMax), max(bP99, f.BStepsP99)
	}
	if len(ratios) > 0 {
		sp := summarize(ratios)
		fmt.Fprintf(out, "  A's loaded p99 ÷ the commit probe's, median of %d: %s (target <= %d: %s)\n",
			sp.n, sp.format("%.2f"), fairMaxOverCommit, verdictAtMost(sp.med, fairMaxOverCommit))
	}
	if r.BatchSize > 0 {
		fmt.Fprintf(out, "  B's steps started while one of A's waited (after its QUEUED, before its STARTED): max %d, p99 %d over the runs (target <= one claim batch, BatchSize %d: %s)\n",
			bMax, bP99, r.BatchSize, verdictAtMost(float64(bMax), float64(r.BatchSize)))
	}
	aIdle, aLoaded := summarize(idle).med, summarize(loaded).med
	fmt.Fprintf(out, "  A's p99 (median over the runs) idle %.2f ms, loaded %.2f ms", aIdle, aLoaded)
	for _, peer := range []struct{ name, key string }{{"River", "river"}, {"DBOS", "dbos"}} {
		p, ok := s.last(peer.key, "fairness")
		if !ok || p.P99Ms <= 0 {
			fmt.Fprintf(out, "; %s: not run", peer.name)
			continue
		}
		fmt.Fprintf(out, "; %s (%d B jobs) idle %.2f ms, loaded %.2f ms: dagen/%s %.3f", peer.name, p.BRuns, p.IdleP99Ms, p.P99Ms, peer.name, aLoaded/p.P99Ms)
	}
	fmt.Fprintln(out)
}

func verdictAtMost(v, most float64) string {
	if v <= most {
		return "meets"
	}
	return "ABOVE"
}

// printLowLoad prints low_load's latencies, when it ran.
func (s benchSet) printLowLoad(out io.Writer) {
	l, ok := s.last("dagen", "low_load")
	if !ok || l.dagen == nil {
		return
	}
	fmt.Fprintf(out, "\nlow_load: step to step p50/p99 %.2f/%.2f ms with notifications, %.2f/%.2f ms polling alone\n",
		l.dagen.P50Ms, l.dagen.P99Ms, l.dagen.PollP50Ms, l.dagen.PollP99Ms)
}

// printSoak prints the soak's first and last intervals and its verdict,
// when it ran.
func (s benchSet) printSoak(out io.Writer) {
	l, ok := s.last("dagen", "soak")
	if !ok || l.dagen == nil || l.dagen.Soak == nil {
		return
	}
	printSoakReport(out, l.dagen.Soak)
}

// printSoakReport prints a soak's rate, its first, reference and last
// intervals, and its verdict.
func printSoakReport(out io.Writer, r *SoakReport) {
	peak := "set by -soak-rate"
	if r.PeakRunsPerSec > 0 {
		peak = fmt.Sprintf("%.0f%% of chain10's peak, %.1f runs/s", 100*soakFraction, r.PeakRunsPerSec)
	}
	fmt.Fprintf(out, "\nsoak: chain10 at %.1f runs/s (%s) for %gs, Retention %gs, an interval every %gs; step wait is QUEUED→STARTED of every step of sampled runs\n",
		r.RunsPerSec, peak, r.DurationSec, r.RetentionSec, r.IntervalSec)
	if len(r.Minutes) == 0 {
		fmt.Fprintln(out, "  no interval recorded")
		return
	}
	show := func(label string, m SoakMinute) {
		fmt.Fprintf(out, "  %-10s %.0f steps/s, backlog %d, step wait p50/p99 %.2f/%.2f ms, run p99 %.1f ms, dead tuples %d, size %.1f MB\n",
			label, m.StepsPerSec, m.BacklogRuns, m.WaitP50Ms, m.WaitP99Ms, m.RunP99Ms, m.DeadTuples, m.TotalMB)
	}
	first, lastM := r.Minutes[0], r.Minutes[len(r.Minutes)-1]
	show(fmt.Sprintf("interval %d", first.Minute), first)
	if r.SizeRefMinute > 0 && r.SizeRefMinute != first.Minute && r.SizeRefMinute != lastM.Minute {
		show(fmt.Sprintf("interval %d", r.SizeRefMinute), r.Minutes[r.SizeRefMinute-1])
	}
	show(fmt.Sprintf("interval %d", lastM.Minute), lastM)
	size := "not judged (a soak under 5 minutes: retention and pruning only reach a steady state after about 3)"
	if r.SizeRefMinute > 0 {
		size = fmt.Sprintf("%.2fx minute %d's (target <= %.1f)", r.SizeRatio, r.SizeRefMinute, soakMaxSize)
	}
	fmt.Fprintf(out, "  last ÷ first: throughput %.2f (target >= %.2f), step wait p99 %.2f (target <= %.1f); size %s\n  verdict: %s\n",
		r.ThroughputRatio, soakMinThroughput, r.P99Ratio, soakMaxP99, size, r.Verdict)
}

// resultLines turns this run's results into comparison lines.
func resultLines(results []Result) []line {
	out := make([]line, 0, len(results))
	for i := range results {
		b, err := json.Marshal(results[i])
		if err != nil {
			continue
		}
		var l line
		if json.Unmarshal(b, &l) == nil {
			l.dagen = &results[i]
			out = append(out, l)
		}
	}
	return out
}

// compareFiles prints the comparison of saved outputs (see readSet).
func compareFiles(compareArg, riverJSON, dbosJSON string, out io.Writer) error {
	set, err := readSet(compareArg, riverJSON, dbosJSON)
	if err != nil {
		return err
	}
	if compare(out, set) == 0 {
		return errors.New("no throughput workload (single_step, chain10, fan50) of dagen in the rounds")
	}
	return nil
}
