package main

import (
	"encoding/json"
	"slices"
	"testing"
)

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
	want := []string{"cpu_us_per_step", "peer", "pg_cpu_s", "rss_mb", "runs", "seconds", "settings", "steal_pct", "steps", "steps_per_sec", "worker_cpu_s", "worker_gc_cpu_s", "workload"}
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
