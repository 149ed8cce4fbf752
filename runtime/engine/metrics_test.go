package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// collect reads the reader's metrics as name -> "label=value,…" -> value:
// a counter's sum, a gauge's value, a histogram's count.
func collect(t *testing.T, r sdkmetric.Reader) map[string]map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]map[string]float64{}
	key := func(s attribute.Set) string {
		k := ""
		for _, kv := range s.ToSlice() {
			if k != "" {
				k += ","
			}
			k += string(kv.Key) + "=" + kv.Value.Emit()
		}
		return k
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			vals := map[string]float64{}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					vals[key(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					vals[key(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					vals[key(p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					vals[key(p.Attributes)] = float64(p.Count)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					vals[key(p.Attributes)] = float64(p.Count)
				}
			}
			out[m.Name] = vals
		}
	}
	return out
}

func oneStep(name string, s engine.Step) *engine.Definition {
	if s.Name == "" {
		s.Name = "a"
	}
	return &engine.Definition{Name: name, Steps: []engine.Step{s}}
}

// TestMetricsCounts runs a scripted set of runs on a manual engine and
// checks the exact counts of runs and step attempts by outcome.
func TestMetricsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := dagtest.NewClock(dagtest.Epoch)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	e, err := engine.New(memstore.New(&memstore.Config{Now: clock.Now}), &engine.Config{Manual: true, MeterProvider: mp})
	require.NoError(t, err)

	ok := func(context.Context, engine.StepInput) ([]byte, error) { return nil, nil }
	var flakes atomic.Int64
	defs := []*engine.Definition{
		oneStep("ok", engine.Step{Run: ok}),
		oneStep("flaky", engine.Step{Retry: engine.RetryPolicy{MaxRetries: 1, Backoff: time.Millisecond},
			Run: func(context.Context, engine.StepInput) ([]byte, error) {
				if flakes.Add(1) <= 2 {
					return nil, errors.New("flake")
				}
				return nil, nil
			}}),
		oneStep("bad", engine.Step{Run: func(context.Context, engine.StepInput) ([]byte, error) {
			return nil, dag.Terminal(errors.New("bad"))
		}}),
		{Name: "skip", Steps: []engine.Step{
			{Name: "a", Run: ok, Skip: []engine.Predicate{{Name: "always", Eval: func(context.Context, engine.StepInput) (bool, error) { return true, nil }}}},
			{Name: "b", Parents: req("a"), Run: ok},
		}},
		oneStep("slow", engine.Step{Timeout: 10 * time.Millisecond, Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}),
	}
	for _, d := range defs {
		require.NoError(t, e.Register(d))
	}
	for wf, n := range map[string]int{"ok": 3, "flaky": 2, "bad": 1, "skip": 1, "slow": 1} {
		for range n {
			_, err := e.Trigger(ctx, wf, "tenant", 1)
			require.NoError(t, err)
		}
	}
	for range 5 {
		for {
			n, err := e.Poll(ctx)
			require.NoError(t, err)
			if n == 0 {
				break
			}
		}
		clock.Advance(time.Second) // the retries' backoff
	}

	got := collect(t, reader)
	require.Equal(t, map[string]float64{
		"workflow=bad": 1, "workflow=flaky": 2, "workflow=ok": 3, "workflow=skip": 1, "workflow=slow": 1,
	}, got["dagen.runs.started"])
	require.Equal(t, map[string]float64{
		"status=FAILED,workflow=bad": 1, "status=COMPLETED,workflow=flaky": 2, "status=COMPLETED,workflow=ok": 3,
		"status=COMPLETED,workflow=skip": 1, "status=FAILED,workflow=slow": 1,
	}, got["dagen.runs.finished"])
	attempts := map[string]float64{
		"outcome=completed,step=a,workflow=ok":    3,
		"outcome=retried,step=a,workflow=flaky":   2,
		"outcome=completed,step=a,workflow=flaky": 2,
		"outcome=failed,step=a,workflow=bad":      1,
		"outcome=skipped,step=a,workflow=skip":    1,
		"outcome=skipped,step=b,workflow=skip":    1,
		"outcome=timed_out,step=a,workflow=slow":  1,
	}
	require.Equal(t, attempts, got["dagen.step.attempts"])
	require.Equal(t, attempts, got["dagen.step.duration"], "one duration per attempt")
}

// TestMetricsBacklog runs a started engine: while it leads, it reports the
// backlog, the tenants past the top one as "other", and claims and
// completions; once the runs end, the backlog gauges go to zero.
func TestMetricsBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	e, err := engine.New(memstore.New(nil), &engine.Config{
		MeterProvider: mp, MetricsTopTenants: 1, Concurrency: 4,
		HeartbeatInterval: 10 * time.Millisecond, PollInterval: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) } // also when an assertion fails: Stop waits for the steps
	require.NoError(t, e.Register(oneStep("block", engine.Step{Run: func(context.Context, engine.StepInput) ([]byte, error) {
		<-release
		return nil, nil
	}})))
	require.NoError(t, e.Start(ctx))
	defer func() { free(); _ = e.Stop(ctx) }()
	var ids []dag.RunID
	for i, tenant := range []string{"big", "big", "big", "big", "big", "small", "small"} {
		_ = i
		id, err := e.Trigger(ctx, "block", tenant, 1)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	require.Eventually(t, e.Leading, 5*time.Second, 5*time.Millisecond)
	var got map[string]map[string]float64
	require.Eventually(t, func() bool {
		got = collect(t, reader)
		b := got["dagen.backlog.tasks"]
		return b["state=queued,tenant=big,workflow=block"]+b["state=running,tenant=big,workflow=block"] == 5 &&
			b["state=queued,tenant=other,workflow=block"]+b["state=running,tenant=other,workflow=block"] == 2
	}, 5*time.Second, 50*time.Millisecond, "backlog: %v", got["dagen.backlog.tasks"])
	for k := range got["dagen.backlog.tasks"] {
		require.NotContains(t, k, "tenant=small", "folded into other")
	}
	// Tasks wait in the queue behind the blocked ones: the oldest's age
	// is reported by tenant and workflow, the small tenants folded too.
	require.Contains(t, got["dagen.backlog.oldest_queued_age"], "tenant=other,workflow=block")
	require.NotContains(t, got["dagen.backlog.oldest_queued_age"], "tenant=small,workflow=block")

	free()
	for _, id := range ids {
		_, err := e.Wait(ctx, id)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		got = collect(t, reader)
		for _, v := range got["dagen.backlog.tasks"] {
			if v != 0 {
				return false
			}
		}
		return len(got["dagen.backlog.tasks"]) > 0
	}, 5*time.Second, 100*time.Millisecond, "backlog: %v", got["dagen.backlog.tasks"])
	require.Equal(t, 7.0, got["dagen.step.attempts"]["outcome=completed,step=a,workflow=block"])
	require.Equal(t, 7.0, got["dagen.runs.finished"]["status=COMPLETED,workflow=block"])
	require.NotZero(t, got["dagen.claim.batch_size"][""]+got["dagen.complete.batch_size"][""])
	require.NotZero(t, got["dagen.complete.duration"][""])
	require.NotZero(t, got["dagen.step.queue_wait"]["workflow=block"])
}
