package main

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestPercentiles(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // 100 down to 1
	}
	if p50, p99 := percentiles(xs); p50 != 50 || p99 != 99 {
		t.Errorf("percentiles(1..100) = %v, %v, want 50, 99", p50, p99)
	}
	if p50, p99 := percentiles([]float64{7.12345}); p50 != 7.123 || p99 != 7.123 {
		t.Errorf("percentiles of one = %v, %v, want 7.123 twice", p50, p99)
	}
	if p50, p99 := percentiles(nil); p50 != 0 || p99 != 0 {
		t.Errorf("percentiles(nil) = %v, %v, want zeros", p50, p99)
	}
}

// keys returns the field names of v's JSON object, sorted.
func keys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The comparison program parses these lines by their field names.
func TestJSONFields(t *testing.T) {
	want := []string{"cpu_us_per_step", "peer", "pg_cpu_s", "rss_mb", "runs", "seconds", "settings", "steal_pct", "steps", "steps_per_sec", "worker_cpu_s", "workload"}
	if got := keys(t, throughputResult{}); !slices.Equal(got, want) {
		t.Errorf("throughput fields %v, want %v", got, want)
	}
	want = []string{"b_runs", "idle_p50_ms", "idle_p99_ms", "p50_ms", "p99_ms", "peer", "runs", "settings", "workload"}
	if got := keys(t, fairnessResult{}); !slices.Equal(got, want) {
		t.Errorf("fairness fields %v, want %v", got, want)
	}
}

func TestSystemDatabaseURL(t *testing.T) {
	got, err := systemDatabaseURL("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "dagen_bench_dbos", 0)
	if want := "postgres://postgres@127.0.0.1:5432/dagen_bench_dbos?sslmode=disable"; err != nil || got != want {
		t.Errorf("got %q, %v, want %q", got, err, want)
	}
	got, err = systemDatabaseURL("postgres://u@h/db", "x", 40)
	if want := "postgres://u@h/x?pool_max_conns=40"; err != nil || got != want {
		t.Errorf("got %q, %v, want %q", got, err, want)
	}
	if _, err := systemDatabaseURL("host=h dbname=db", "x", 0); err == nil {
		t.Error("a key=value DSN was accepted")
	}
}

func TestRound(t *testing.T) {
	for _, c := range []struct {
		v      float64
		places int
		want   float64
	}{{1.23456, 3, 1.235}, {2052.4, 0, 2052}, {696.65, 1, 696.7}, {-0.5, 0, -1}} {
		if got := round(c.v, c.places); got != c.want {
			t.Errorf("round(%v, %d) = %v, want %v", c.v, c.places, got, c.want)
		}
	}
}
