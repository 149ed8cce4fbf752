package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/metrics"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// prometheusBin is Debian's prometheus package's server (.ci/run
// installs it).
const prometheusBin = "/usr/bin/prometheus"

// TestPrometheus runs a worker on Postgres under load while a real
// Prometheus scrapes its /metrics every second, and asks Prometheus, as an
// operator's dashboard would, for the steps run and the backlog.
func TestPrometheus(t *testing.T) {
	if _, err := os.Stat(prometheusBin); err != nil {
		t.Fatalf("no %s: install Debian's prometheus package (apt-get install prometheus; .ci/run does): %v", prometheusBin, err)
	}
	ctx := context.Background()
	pool := pgtest.NewPool(t, 8)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	st, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)

	h, mp, err := metrics.NewPrometheus()
	require.NoError(t, err)
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	e, err := engine.New(st, &engine.Config{MeterProvider: mp, Concurrency: 4, HeartbeatInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Register(&engine.Definition{Name: "single", Steps: []engine.Step{{Name: "a",
		Run: func(context.Context, engine.StepInput) ([]byte, error) {
			time.Sleep(20 * time.Millisecond) // a backlog that lasts a few scrapes
			return nil, nil
		}}}}))

	prom := startPrometheus(t, strings.TrimPrefix(srv.URL, "http://"))
	require.Eventually(t, func() bool { return prom.value(t, `up{job="dagen"}`) == 1 }, 30*time.Second, 200*time.Millisecond, "prometheus never scraped the worker")

	const runs = 400
	reqs := make([]engine.TriggerRequest, runs)
	for i := range reqs {
		reqs[i] = engine.TriggerRequest{Workflow: "single", Tenant: fmt.Sprintf("tenant-%d", i%3), Input: i}
	}
	_, err = e.TriggerMany(ctx, reqs) // queued before the worker starts: a backlog
	require.NoError(t, err)
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })

	var sawBacklog, sawAge bool
	require.Eventually(t, func() bool {
		if prom.value(t, `sum(dagen_backlog_tasks)`) > 0 {
			sawBacklog = true
		}
		if prom.value(t, `max(dagen_backlog_oldest_queued_age_seconds)`) > 0 {
			sawAge = true
		}
		// An attempt is counted when its step returns, its run's end once
		// the result is stored: a scrape can fall between the two.
		return prom.value(t, `sum(dagen_step_attempts_total{workflow="single",step="a",outcome="completed"})`) == runs &&
			prom.value(t, `sum(dagen_runs_finished_total{workflow="single",status="COMPLETED"})`) == runs
	}, 60*time.Second, 250*time.Millisecond, "steps and runs never all counted")
	require.True(t, sawBacklog, "the backlog gauge never showed the queued runs")
	require.True(t, sawAge, "the oldest queued age never showed the queued runs waiting")
	// Nothing counted twice: the counters stay at the runs.
	require.Equal(t, float64(runs), prom.value(t, `sum(dagen_step_attempts_total{workflow="single",step="a"})`))
	require.Equal(t, float64(runs), prom.value(t, `sum(dagen_runs_finished_total{workflow="single"})`))
	// The oldest queued task's age comes from the same reading: zero too
	// once the queue is empty.
	require.Eventually(t, func() bool {
		return prom.value(t, `sum(dagen_backlog_tasks)`) == 0 && prom.value(t, `count(dagen_backlog_tasks)`) > 0 &&
			prom.value(t, `sum(dagen_backlog_oldest_queued_age_seconds)`) == 0 && prom.value(t, `count(dagen_backlog_oldest_queued_age_seconds)`) > 0
	}, 30*time.Second, 250*time.Millisecond, "the backlog gauges never went to zero")

	b, err := e.Backlog(ctx)
	require.NoError(t, err)
	require.Equal(t, []store.BacklogEntry(nil), b)
}

// promServer is a Prometheus server started for a test.
type promServer struct{ url string }

// startPrometheus starts Prometheus scraping target's /metrics every
// second, as job "dagen", with its storage in a temporary directory.
func startPrometheus(t *testing.T, target string) *promServer {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: dagen
    scrape_interval: 1s
    static_configs:
      - targets: [%q]
`, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	addr := freeAddr(t)
	cmd := exec.Command(prometheusBin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus's log:\n%s", out)
		}
	})
	p := &promServer{url: "http://" + addr}
	require.Eventually(t, func() bool {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "prometheus never became ready")
	return p
}

// value runs an instant query and returns its one value, or -1 when it
// has none.
func (p *promServer) value(t *testing.T, query string) float64 {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(query))
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status, "query %s: %s", query, body.Error)
	if len(body.Data.Result) == 0 {
		return -1
	}
	require.Len(t, body.Data.Result, 1, "query %s", query)
	v, err := strconv.ParseFloat(body.Data.Result[0].Value[1].(string), 64)
	require.NoError(t, err)
	return v
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
