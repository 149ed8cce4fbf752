package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestTraces runs traced runs on two workers, on each store: every step
// attempt's span, on either worker, is a child of the span the run was
// triggered under, in its trace, with its attributes; a step's own span
// nests under its attempt's.
func TestTraces(t *testing.T) {
	t.Run("memstore", func(t *testing.T) {
		t.Parallel()
		st := memstore.New(nil)
		testTraces(t, func() store.Store { return st })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		schema := pgtest.Schema(t)
		require.NoError(t, pgstore.Migrate(context.Background(), pgtest.Pool(t, schema, 2)))
		testTraces(t, func() store.Store {
			st, err := pgstore.New(context.Background(), pgtest.Pool(t, schema, 8), nil)
			require.NoError(t, err)
			return st
		})
	})
}

func testTraces(t *testing.T, open func() store.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	exp := tracetest.NewInMemoryExporter()
	provider := func(name string) *sdktrace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.instance.id", name))))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return tp
	}

	var mu sync.Mutex
	failedOnce := map[dag.RunID]bool{}
	slow := func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
		time.Sleep(20 * time.Millisecond) // so that both workers take some
		return nil, nil
	}
	def := &engine.Definition{Name: "traced", Steps: []engine.Step{
		{Name: "a", Run: slow},
		{Name: "b1", Parents: req("a"), Run: slow},
		{Name: "b2", Parents: req("a"), Run: slow},
		{Name: "b3", Parents: req("a"), Run: slow},
		{Name: "flaky", Parents: req("a"), Retry: engine.RetryPolicy{MaxRetries: 1, Backoff: time.Millisecond},
			Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
				mu.Lock()
				defer mu.Unlock()
				if !failedOnce[in.Info.RunID] {
					failedOnce[in.Info.RunID] = true
					return nil, errors.New("flake")
				}
				return nil, nil
			}},
		{Name: "skipped", Parents: req("a"), Run: slow,
			Skip: []engine.Predicate{{Name: "always", Eval: func(context.Context, engine.StepInput) (bool, error) { return true, nil }}}},
		{Name: "c", Parents: req("b1", "b2", "b3", "flaky"), Run: func(ctx context.Context, _ engine.StepInput) ([]byte, error) {
			// The user's own span, from the tracer of the span in ctx.
			_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("user").Start(ctx, "user-work")
			span.End()
			return nil, nil
		}},
	}}
	var engines []*engine.Engine
	for _, w := range []string{"w1", "w2"} {
		engines = append(engines, workerWith(t, open(), engine.Config{
			WorkerID: w, Concurrency: 2, PollInterval: 5 * time.Millisecond, IdlePollInterval: 5 * time.Millisecond,
			Lease: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond, TracerProvider: provider(w),
		}, def))
	}
	// The caller triggers through w1 (which may start the first steps
	// itself), under its own spans.
	trigger := engines[0]
	caller := provider("caller").Tracer("caller")

	const runs = 4
	roots := map[dag.RunID]trace.SpanContext{}
	for i := range runs {
		sctx, span := caller.Start(ctx, fmt.Sprintf("trigger-%d", i))
		id, err := trigger.Trigger(sctx, "traced", "tenant1", i)
		require.NoError(t, err)
		span.End()
		roots[id] = span.SpanContext()
	}
	// An untraced trigger: its run has no spans.
	untraced, err := trigger.Trigger(ctx, "traced", "tenant1", 99)
	require.NoError(t, err)
	for id := range roots {
		res, err := trigger.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}
	_, err = trigger.Wait(ctx, untraced)
	require.NoError(t, err)

	type attempt struct{ step, outcome string }
	got := map[dag.RunID][]attempt{}
	workers := map[string]bool{}
	attemptSpans := map[trace.SpanID]dag.RunID{}
	var users []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "user-work" {
			users = append(users, s)
			continue
		}
		if s.InstrumentationScope.Name != "github.com/dagenhq/dagen/runtime/engine" {
			continue
		}
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes {
			attrs[kv.Key] = kv.Value
		}
		id, err := dag.ParseRunID(attrs["dagen.run_id"].AsString())
		require.NoError(t, err)
		require.NotEqual(t, untraced, id, "a run triggered under no span has no spans")
		root, ok := roots[id]
		require.True(t, ok, "span of an unknown run %s", id)
		require.Equal(t, root.TraceID(), s.SpanContext.TraceID(), "one trace a run")
		require.Equal(t, root.SpanID(), s.Parent.SpanID(), "a child of the trigger's span")
		require.Equal(t, trace.SpanKindConsumer, s.SpanKind)
		require.Equal(t, "traced", attrs["dagen.workflow"].AsString())
		require.Equal(t, "tenant1", attrs["dagen.tenant"].AsString())
		step, outcome := attrs["dagen.step"].AsString(), attrs["dagen.outcome"].AsString()
		require.Equal(t, "traced."+step, s.Name)
		switch outcome {
		case "retried":
			require.Equal(t, codes.Error, s.Status.Code)
			require.Equal(t, "flake", s.Status.Description)
			require.EqualValues(t, 1, attrs["dagen.attempt"].AsInt64())
		case "skipped":
			require.Equal(t, "skip=always", attrs["dagen.skip_reason"].AsString())
		}
		if step == "flaky" && outcome == "completed" {
			require.EqualValues(t, 2, attrs["dagen.attempt"].AsInt64())
		}
		got[id] = append(got[id], attempt{step, outcome})
		attemptSpans[s.SpanContext.SpanID()] = id
		for _, kv := range s.Resource.Attributes() {
			if kv.Key == "service.instance.id" {
				workers[kv.Value.AsString()] = true
			}
		}
	}
	want := []attempt{{"a", "completed"}, {"b1", "completed"}, {"b2", "completed"}, {"b3", "completed"},
		{"flaky", "retried"}, {"flaky", "completed"}, {"skipped", "skipped"}, {"c", "completed"}}
	require.Len(t, got, runs)
	for id := range roots {
		require.ElementsMatch(t, want, got[id], "run %s", id)
	}
	require.Equal(t, map[string]bool{"w1": true, "w2": true}, workers, "both workers ran traced attempts")
	require.Len(t, users, runs)
	for _, u := range users {
		id, ok := attemptSpans[u.Parent.SpanID()]
		require.True(t, ok, "the step's span nests under its attempt's")
		require.Equal(t, roots[id].TraceID(), u.SpanContext.TraceID())
	}
}

// TestUntracedAttemptsAllocateNothing: with no TracerProvider set and no
// span at the trigger, an attempt costs tracing no allocation. It runs an
// attempt with the engine as it is and with a step that allocates nothing,
// and compares with a run whose trigger had a span.
func TestUntracedAttemptsAllocateNothing(t *testing.T) {
	allocs := func(traceParent string) float64 {
		ct := store.ClaimedTask{RunID: dag.NewRunID(), Workflow: "wf", Tenant: "t", Step: "a", Kind: store.KindStep, Attempt: 1, TraceParent: traceParent}
		e, err := engine.New(memstore.New(nil), &engine.Config{Manual: true})
		require.NoError(t, err)
		return testing.AllocsPerRun(200, func() { engine.TraceAttempt(e, &ct) })
	}
	require.Zero(t, allocs(""), "untraced: no allocation")
	require.NotZero(t, allocs("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "traced (the check can fail)")
}

// TestScheduledRunsAreTraced: a schedule's firing is a span, the parent of
// the attempts of the runs it starts, when a tracer provider is set.
func TestScheduledRunsAreTraced(t *testing.T) {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	clock := dagtest.NewClock(dagtest.Epoch)
	e, err := engine.New(memstore.New(&memstore.Config{Now: clock.Now}),
		&engine.Config{Manual: true, WorkerID: "w", TracerProvider: tp})
	require.NoError(t, err)
	require.NoError(t, e.Register(reportDef(nightly(""))))
	poll := func() {
		for {
			n, err := e.Poll(ctx)
			require.NoError(t, err)
			if n == 0 {
				return
			}
		}
	}
	poll() // registers the schedule
	clock.Advance(3 * time.Hour)
	poll()

	var firing, attempt *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "dagen.schedule report/nightly":
			firing = &s
		case "report.build":
			attempt = &s
		}
	}
	require.NotNil(t, firing, "the firing's span")
	require.NotNil(t, attempt, "the scheduled run's attempt span")
	require.Equal(t, firing.SpanContext.TraceID(), attempt.SpanContext.TraceID(), "one trace")
	require.Equal(t, firing.SpanContext.SpanID(), attempt.Parent.SpanID(), "the attempt is the firing's child")
}
