package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		xs          []float64
		med, lo, hi float64
		text        string
	}{
		{nil, 0, 0, 0, "-"},
		{[]float64{7}, 7, 7, 7, "7.0"},
		{[]float64{3, 1, 2}, 2, 1, 3, "2.0 [1.0–3.0]"},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4, "2.5 [1.0–4.0]"},
	} {
		s := summarize(c.xs)
		if s.med != c.med || s.lo != c.lo || s.hi != c.hi || s.n != len(c.xs) || s.format("%.1f") != c.text {
			t.Errorf("summarize(%v) = %+v %q, want %v [%v–%v] %q", c.xs, s, s.format("%.1f"), c.med, c.lo, c.hi, c.text)
		}
	}
}

func TestPairedRatio(t *testing.T) {
	fig := func(rate float64) roundFigure { return roundFigure{rate: rate, ok: rate > 0} }
	dagen := []roundFigure{fig(30000), fig(33000), fig(36000), fig(40000)}
	peer := []roundFigure{fig(20000), fig(20000), fig(30000), {}} // no peer in round 4
	r := pairedRatio(dagen, peer, "River")
	// Rounds paired: 1.5, 1.65, 1.2; unpaired medians would give 34500/20000.
	if r.n != 3 || r.med != 1.5 || r.lo != 1.2 || r.hi != 1.65 || len(r.flagged) != 0 {
		t.Errorf("pairedRatio = %+v", r)
	}
	if v := r.verdict(1.5); v != "meets (2 of 3 rounds meet)" {
		t.Errorf("verdict %q", v)
	}
	if v := r.verdict(1.6); v != "BELOW (1 of 3 rounds meet)" {
		t.Errorf("verdict %q", v)
	}
	stolen := pairedRatio([]roundFigure{{rate: 2, ok: true, steal: 9}}, []roundFigure{{rate: 1, ok: true, drift: 0.5}}, "River")
	if v := stolen.verdict(1); !strings.Contains(v, "UNRELIABLE: round 1: CPU steal 9.0% (dagen)") || !strings.Contains(v, "River's runs differ by 50%") {
		t.Errorf("steal and drift not flagged: %q", v)
	}
	if v := pairedRatio(dagen, make([]roundFigure, 4), "DBOS").verdict(10); v != "not judged" {
		t.Errorf("no DBOS: %q", v)
	}
}

// benchDir writes make bench's output directory: three rounds of River and
// dagen (and DBOS when withDBOS), River missing in round 3, and the runs
// made once.
func benchDir(t *testing.T, withDBOS bool) string {
	t.Helper()
	dir := t.TempDir()
	dagen := []float64{30000, 33000, 36000}
	river := []string{"20000", "22000", ""}
	dbos := []string{"2000", "3000", "2400"}
	for i := range 3 {
		rd := filepath.Join(dir, "round-"+string(rune('1'+i)))
		if err := os.Mkdir(rd, 0o755); err != nil {
			t.Fatal(err)
		}
		var d strings.Builder
		for j, w := range throughputWorkloads {
			rate := dagen[i] * (1 - 0.1*float64(j)) // chain10 at 90%, fan50 at 80%
			// single_step's runs with triggers: 200,000 in 5 + 5 s, 20,000
			// a second, in rounds 1 and 2; round 3's line gives no runs, and
			// its single_capped is not judged.
			runs := ""
			if w == "single_step" && i < 2 {
				runs = `"runs":200000,"seconds":5,"trigger_seconds":5,`
			}
			d.WriteString(`{"peer":"dagen","workload":"` + w + `",` + runs + `"steps":200000,"steps_per_sec":` + ftoa(rate) + `,"worker_cpu_s":2,"pg_cpu_s":8,"steal_pct":0}` + "\n")
		}
		// single_capped's 20,000 runs in 1 s + 0.6, 1.0 and 1.4 s: 0.625
		// and 0.5 of single_step's in rounds 1 and 2.
		d.WriteString(`{"peer":"dagen","workload":"single_capped","runs":20000,"steps":20000,"seconds":` + ftoa(0.6+0.4*float64(i)) + `,"trigger_seconds":1}` + "\n")
		writeFile(t, filepath.Join(rd, "dagen.jsonl"), d.String())
		if river[i] != "" {
			writeFile(t, filepath.Join(rd, "river.txt"), "river tuned: 200000 no-op jobs ...\n"+
				`{"peer":"river","workload":"single_step","jobs":200000,"steps":200000,"jobs_per_sec":`+river[i]+`,"steps_per_sec":`+river[i]+`,"cpu_us_per_step":80,"settings":"tuned"}`+"\n")
		}
		if withDBOS {
			var b strings.Builder
			b.WriteString("dbos: human text\nnot json {\n")
			for _, w := range throughputWorkloads {
				b.WriteString(`{"peer":"dbos","workload":"` + w + `","runs":100,"steps":1000,"seconds":1,"steps_per_sec":` + dbos[i] + `,"cpu_us_per_step":900}` + "\n")
			}
			writeFile(t, filepath.Join(rd, "dbos.txt"), b.String())
		}
	}
	writeFile(t, filepath.Join(dir, "latency.jsonl"),
		// Three fairness runs: A ÷ the probe 4.00, 2.40 and 1.00.
		`{"peer":"dagen","workload":"fairness","runs":20210,"b_runs":20000,"p99_ms":20,"idle_p99_ms":3,"commit_p99_ms":5,"b_steps_before_a_max":10,"b_steps_before_a_p99":8,"batch_size":64,"concurrency":64}`+"\n"+
			`{"peer":"dagen","workload":"fairness","runs":20210,"b_runs":20000,"p99_ms":12,"idle_p99_ms":3,"commit_p99_ms":5,"b_steps_before_a_max":40,"b_steps_before_a_p99":30,"batch_size":64,"concurrency":64}`+"\n"+
			`{"peer":"dagen","workload":"fairness","runs":20210,"b_runs":20000,"p99_ms":5,"idle_p99_ms":3,"commit_p99_ms":5,"b_steps_before_a_max":2,"b_steps_before_a_p99":1,"batch_size":64,"concurrency":64}`+"\n")
	writeFile(t, filepath.Join(dir, "river-fairness.txt"), "river tuned fairness: ...\n"+
		`{"peer":"river","workload":"fairness","b_runs":20000,"idle_p99_ms":250,"p99_ms":1200}`+"\n")
	if withDBOS {
		writeFile(t, filepath.Join(dir, "dbos-fairness.txt"), `{"peer":"dbos","workload":"fairness","runs":200,"b_runs":20000,"idle_p50_ms":5,"idle_p99_ms":9,"p50_ms":50,"p99_ms":240}`+"\n")
	}
	return dir
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func TestCompareDirWithoutDBOS(t *testing.T) {
	var out bytes.Buffer
	if err := compareFiles(benchDir(t, false), "", "", &out); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"3 round(s); River's single_step in 2, DBOS in 0 (no DBOS output",
		// dagen single_step 30000, 33000, 36000; River 20000, 22000 (none in round 3).
		"single_step 33000 [30000–36000] 21000 [20000–22000] -",
		// Paired: 30000/20000 = 1.5 and 33000/22000 = 1.5.
		"single_step ÷ River single_step 1.50 [1.50–1.50] target >= 1.5: meets (2 of 2 rounds meet)",
		// chain10 at 90%: 1.35 both rounds.
		"chain10 ÷ River single_step 1.35 [1.35–1.35] target >= 1.5: BELOW (0 of 2 rounds meet)",
		// single_capped: 0.625 and 0.5 (round 3 has no single_step runs).
		"single_capped ÷ single_step, runs/s with triggers 0.56 [0.50–0.62] target >= 0.8: BELOW (0 of 2 rounds meet)",
		"single_step ÷ DBOS single_step - target >= 10: not judged",
		// (2 + 8) s over 200,000 steps: 50 µs, against River's 80.
		"single_step 50.0 [50.0–50.0] 80.0 [80.0–80.0] - meets (0.62x River's)",
		"run 2: A's loaded p99 12.00 ms ÷ the commit probe's loaded p99 5.00 ms = 2.40",
		// The median of 4.00, 2.40 and 1.00, though the first run alone is above 3.
		"A's loaded p99 ÷ the commit probe's, median of 3: 2.40 [1.00–4.00] (target <= 3: meets)",
		"max 40, p99 30 over the runs (target <= one claim batch, BatchSize 64: meets)",
		// The peers against the median of the three runs' loaded p99s.
		"River (20000 B jobs) idle 250.00 ms, loaded 1200.00 ms: dagen/River 0.010; DBOS: not run",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCompareDirWithDBOS(t *testing.T) {
	var out bytes.Buffer
	if err := compareFiles(benchDir(t, true), "", "", &out); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"River's single_step in 2, DBOS in 3",
		// DBOS single_step 2000, 3000, 2400: median 2400.
		"single_step 33000 [30000–36000] 21000 [20000–22000] 2400 [2000–3000]",
		// Paired: 15, 11, 15.
		"single_step ÷ DBOS single_step 15.0 [11.0–15.0] target >= 10: meets (3 of 3 rounds meet)",
		// fan50 at 80%: 12, 8.8, 12.
		"fan50 ÷ DBOS fan50 12.0 [8.8–12.0] target >= 10: meets (2 of 3 rounds meet)",
		"single_step 50.0 [50.0–50.0] 80.0 [80.0–80.0] 900.0 [900.0–900.0]",
		"DBOS (20000 B jobs) idle 9.00 ms, loaded 240.00 ms: dagen/DBOS 0.050",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCompareFileLists(t *testing.T) {
	dir := benchDir(t, true)
	r := func(i int, f string) string { return filepath.Join(dir, "round-"+string(rune('1'+i)), f) }
	var out bytes.Buffer
	// Rounds 1 and 2 as files, paired by position.
	err := compareFiles(r(0, "dagen.jsonl")+","+r(1, "dagen.jsonl"), r(0, "river.txt")+","+r(1, "river.txt"), r(0, "dbos.txt")+","+r(1, "dbos.txt"), &out)
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out.String()), " ")
	if !strings.Contains(flat, "2 round(s); River's single_step in 2, DBOS in 2") || !strings.Contains(flat, "single_step ÷ DBOS single_step 13.0 [11.0–15.0]") {
		t.Errorf("file lists:\n%s", out.String())
	}
	if err := compareFiles(r(0, "dagen.jsonl")+","+r(1, "dagen.jsonl"), r(0, "river.txt")+","+r(1, "river.txt")+","+r(0, "river.txt"), "", &out); err == nil {
		t.Error("three River files for two rounds accepted")
	}
	if err := compareFiles(dir, r(0, "river.txt"), "", &out); err == nil {
		t.Error("a directory with -river-json accepted")
	}
}

func TestSoakJudge(t *testing.T) {
	minutes := func(sizes []float64, rate, p99 func(i int) float64) []SoakMinute {
		var ms []SoakMinute
		for i, s := range sizes {
			ms = append(ms, SoakMinute{Minute: i + 1, EndSec: float64(60 * (i + 1)), StepsPerSec: rate(i), WaitP99Ms: p99(i), TotalMB: s})
		}
		return ms
	}
	steady := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	// Ten minutes: the tables grow for two, then hold within 10% of
	// minute 3's size.
	sizes := []float64{40, 80, 100, 104, 98, 105, 103, 99, 106, 108}
	r := &SoakReport{Minutes: minutes(sizes, steady(20000), steady(8))}
	r.judge(10 * time.Minute)
	if r.Verdict != "meets" || r.SizeRefMinute != 3 || r.SizeRatio != 1.08 || r.ThroughputRatio != 1 || r.P99Ratio != 1 {
		t.Errorf("steady soak: %+v", *r)
	}
	// Slower and slower, p99 up, tables growing.
	r = &SoakReport{Minutes: minutes([]float64{40, 80, 100, 120, 140, 160}, func(i int) float64 { return 20000 - 1000*float64(i) }, func(i int) float64 { return 8 + 2*float64(i) })}
	r.judge(6 * time.Minute)
	for _, want := range []string{"throughput 0.75", "step wait p99 2.25x", "tables 1.60x their size at minute 3"} {
		if !strings.Contains(r.Verdict, want) || !strings.HasPrefix(r.Verdict, "MISSES: ") {
			t.Errorf("degrading soak: verdict %q lacks %q", r.Verdict, want)
		}
	}
	// Under 5 minutes the sizes are not judged, however they grow.
	r = &SoakReport{Minutes: minutes([]float64{1, 2, 3, 4}, steady(100), steady(1))}
	r.judge(4 * time.Minute)
	if r.Verdict != "meets" || r.SizeRefMinute != 0 || r.SizeRatio != 0 {
		t.Errorf("short soak: %+v", *r)
	}
	r = &SoakReport{Minutes: minutes([]float64{1}, steady(100), steady(1))}
	if r.judge(time.Minute); !strings.HasPrefix(r.Verdict, "not judged") {
		t.Errorf("one interval: %q", r.Verdict)
	}
}

func TestRunWaits(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	evs := []store.Event{
		{At: at(0), Step: "S1", Type: store.EventQueued},
		{At: at(2), Step: "S1", Type: store.EventStarted},
		{At: at(3), Step: "S1", Type: store.EventCompleted},
		{At: at(3), Step: "S2", Type: store.EventQueued},
		{At: at(10), Step: "S2", Type: store.EventStarted},
	}
	// S2 has not completed: the run's latency runs to now.
	waits, run, ok := runWaits(evs, at(50))
	if !ok || len(waits) != 2 || waits[0] != 2 || waits[1] != 7 || run != 50 {
		t.Errorf("runWaits = %v %v %v", waits, run, ok)
	}
	// S2 queued, not started: its wait so far counts.
	waits, _, _ = runWaits(evs[:4], at(20))
	if len(waits) != 2 || waits[1] != 17 {
		t.Errorf("unstarted step: %v", waits)
	}
	if _, _, ok := runWaits(nil, at(0)); ok {
		t.Error("no events is ok")
	}
}

func TestOvertakes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	starts := []time.Time{at(1), at(2), at(2), at(5), at(9), at(10)}
	windows := []aWindow{
		{queued: at(0), started: at(5)},  // 1, 2, 2: 3 (5 is A's own batch, not before it)
		{queued: at(2), started: at(10)}, // 5, 9: 2 (2 is not after A's QUEUED)
		{queued: at(11), started: at(11)},
	}
	if most, p99 := overtakes(windows, starts); most != 3 || p99 != 3 {
		t.Errorf("overtakes = %d, %d; want 3, 3", most, p99)
	}
	if most, p99 := overtakes(nil, starts); most != 0 || p99 != 0 {
		t.Errorf("no windows: %d %d", most, p99)
	}
}
