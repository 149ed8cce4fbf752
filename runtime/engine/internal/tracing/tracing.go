// Package tracing makes the engine's OpenTelemetry spans: one a step
// attempt, a child of the span the run was triggered under, on whichever
// worker runs it. It depends on the trace API only; the program brings
// the SDK (engine.Config.TracerProvider).
//
// The trigger's span context travels with the run as a W3C traceparent
// (store.NewRun.TraceParent, handed back by every claim). A run triggered
// under no span has none, and its attempts start no span: with no
// TracerProvider set, and callers that start no spans, tracing costs a
// string comparison an attempt and allocates nothing.
package tracing

import (
	"context"
	"encoding/hex"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// Scope is the instrumentation scope the engine's tracer is named for.
const Scope = "github.com/dagenhq/dagen/runtime/engine"

// Attribute keys of an attempt's span.
const (
	Workflow = attribute.Key("dagen.workflow")
	Step     = attribute.Key("dagen.step")
	RunID    = attribute.Key("dagen.run_id")
	Tenant   = attribute.Key("dagen.tenant")
	Attempt  = attribute.Key("dagen.attempt")
	Element  = attribute.Key("dagen.element")
	Outcome  = attribute.Key("dagen.outcome")
	Reason   = attribute.Key("dagen.skip_reason")
	WakeAt   = attribute.Key("dagen.wake_at")
	WaitFor  = attribute.Key("dagen.wait_seconds")
	// ChildRun is the id of the run a child step's attempt started.
	ChildRun = attribute.Key("dagen.child_run")
	// ScheduleName names the schedule of a firing's span.
	ScheduleName = attribute.Key("dagen.schedule")
	SleepEvent   = "dagen.sleep"
	AwaitEvent   = "dagen.signal_wait"
)

// Tracer starts the engine's spans.
type Tracer struct{ t trace.Tracer }

// New returns a Tracer of tp's.
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{t: tp.Tracer(Scope)}
}

// TraceParent is the W3C traceparent of the span in ctx, or "" when ctx
// carries none (then it allocates nothing).
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

// Parse reads a traceparent TraceParent wrote (version 00) into a remote
// span context; ok is false for anything else.
func Parse(tp string) (sc trace.SpanContext, ok bool) {
	if len(tp) != 55 || tp[:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return sc, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	var fl [1]byte
	if _, err := hex.Decode(tid[:], []byte(tp[3:35])); err != nil {
		return sc, false
	}
	if _, err := hex.Decode(sid[:], []byte(tp[36:52])); err != nil {
		return sc, false
	}
	if _, err := hex.Decode(fl[:], []byte(tp[53:55])); err != nil {
		return sc, false
	}
	sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(fl[0]), Remote: true})
	return sc, sc.IsValid()
}

// Schedule starts the span of a schedule's firing, the parent of the runs
// it starts (a schedule has no caller whose span they could belong to),
// and returns ctx with it. Under the global no-op provider its context is
// invalid, so the runs carry none and are not traced.
func (t *Tracer) Schedule(ctx context.Context, ref store.ScheduleRef) (context.Context, trace.Span) {
	return t.t.Start(ctx, "dagen.schedule "+ref.Workflow+"/"+ref.Name,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(Workflow.String(ref.Workflow), Tenant.String(ref.Tenant), ScheduleName.String(ref.Name)))
}

// Attempt starts the span of a claimed task's attempt of step (a mapped
// step's name for its elements), a child of the run's trigger span, and
// returns ctx with it. A run without a trace context gets no span: span
// is nil and ctx is returned as it is.
func (t *Tracer) Attempt(ctx context.Context, ct *store.ClaimedTask, step string) (context.Context, trace.Span) {
	if ct.TraceParent == "" {
		return ctx, nil
	}
	parent, ok := Parse(ct.TraceParent)
	if !ok {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		Workflow.String(ct.Workflow), Step.String(step), RunID.String(ct.RunID.String()),
		Tenant.String(ct.Tenant), Attempt.Int(ct.Attempt),
	}
	if ct.Kind == store.KindElement {
		attrs = append(attrs, Element.Int(ct.Element))
	}
	return t.t.Start(trace.ContextWithRemoteSpanContext(ctx, parent), ct.Workflow+"."+step,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// End ends an attempt's span (nil: none) with its result: outcome is the
// attempt's outcome as the metrics label it (meters.Outcome). A failed,
// retried or timed out attempt sets the span's status to its error; a
// sleep and a signal wait add an event with how long they wait. An
// attempt whose result is not stored (kept false: Stop cut it short) ends
// with outcome "released".
func End(span trace.Span, res *store.TaskResult, outcome string, kept bool, now time.Time) {
	if span == nil {
		return
	}
	if !kept {
		outcome = "released"
	}
	span.SetAttributes(Outcome.String(outcome))
	switch {
	case !kept:
	case res.Outcome == store.OutcomeSkipped:
		span.SetAttributes(Reason.String(res.Reason))
	case res.Outcome == store.OutcomeFailed || res.Outcome == store.OutcomeRetry:
		span.SetStatus(codes.Error, res.Error)
	case res.Outcome == store.OutcomeSleep:
		at := res.WakeAt
		if at.IsZero() {
			at = now.Add(res.Delay)
		}
		span.AddEvent(SleepEvent, trace.WithAttributes(WakeAt.String(at.UTC().Format(time.RFC3339Nano)),
			WaitFor.Float64(at.Sub(now).Seconds())))
	case res.Outcome == store.OutcomeChild && res.Child != nil:
		span.SetAttributes(ChildRun.String(res.Child.ID.String()))
	case res.Outcome == store.OutcomeAwait:
		var kv []attribute.KeyValue
		if res.Delay > 0 {
			kv = append(kv, WaitFor.Float64(res.Delay.Seconds()))
		}
		span.AddEvent(AwaitEvent, trace.WithAttributes(kv...))
	}
	span.End()
}

// EndGoexit ends an attempt's span that End did not end: its step called
// runtime.Goexit. It does nothing to an ended span.
func EndGoexit(span trace.Span) {
	if !span.IsRecording() {
		return // ended, or never recorded
	}
	span.SetAttributes(Outcome.String("goexit"))
	span.SetStatus(codes.Error, "the step called runtime.Goexit")
	span.End()
}

// TraceID is the trace id of a traceparent TraceParent wrote, or "".
func TraceID(tp string) string {
	if len(tp) != 55 {
		return ""
	}
	return tp[3:35]
}

// LogArgs are the slog arguments of a log line about a claimed task: its
// run, workflow, step (an element's name for an element), tenant and,
// when its run has one, trace id; then more.
func LogArgs(ct *store.ClaimedTask, more ...any) []any {
	return RunLogArgs(ct.RunID, ct.Workflow, ct.Tenant, ct.TraceParent, append([]any{"step", ct.Step}, more...)...)
}

// RunLogArgs are the slog arguments of a log line about a run: its id,
// workflow, tenant and, when traceParent is set, trace id; then more.
func RunLogArgs(run dag.RunID, workflow, tenant, traceParent string, more ...any) []any {
	args := make([]any, 0, 8+len(more))
	args = append(args, "run", run, "workflow", workflow, "tenant", tenant)
	if id := TraceID(traceParent); id != "" {
		args = append(args, "trace_id", id)
	}
	return append(args, more...)
}

// CtxLogArgs are LogArgs for a step's ctx (dag.Info and the span in it),
// when a claimed task is not at hand; step and run are used when ctx
// has no step's info.
func CtxLogArgs(ctx context.Context, run dag.RunID, step string, more ...any) []any {
	ct := store.ClaimedTask{RunID: run, Step: step}
	if info, ok := dag.Info(ctx); ok {
		ct.Workflow, ct.Tenant = info.Workflow, info.Tenant
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return append(LogArgs(&ct, "trace_id", sc.TraceID().String()), more...)
	}
	return LogArgs(&ct, more...)
}
