// Package meters holds the engine's OpenTelemetry instruments, so that the
// code that runs steps records a fact in one call and reads as it did. It
// depends on the metrics API only: with no MeterProvider set, the global
// one is a no-op, and the calls cost a map lookup.
//
// Cardinality is bounded: labels are workflows, steps (a mapped step's
// elements count under the step), outcomes and statuses, store operations;
// tenants appear on the backlog gauges only, the busiest TopTenants of
// them by name and the rest as "other".
package meters

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/dagenhq/dagen/runtime/store"
)

// Scope is the instrumentation scope the engine's meter is named for.
const Scope = "github.com/dagenhq/dagen/runtime/engine"

// Metric names, in OpenTelemetry's dotted form; Prometheus sees dots as
// underscores, with _total on counters and _seconds on durations.
const (
	RunsStarted      = "dagen.runs.started"
	RunsFinished     = "dagen.runs.finished"
	StepAttempts     = "dagen.step.attempts"
	StepDuration     = "dagen.step.duration"
	StepQueueWait    = "dagen.step.queue_wait"
	ClaimBatch       = "dagen.claim.batch_size"
	ClaimDuration    = "dagen.claim.duration"
	CompleteBatch    = "dagen.complete.batch_size"
	CompleteDuration = "dagen.complete.duration"
	StoreErrors      = "dagen.store.errors"
	ScheduleLag      = "dagen.schedule.lag"
	BacklogTasks     = "dagen.backlog.tasks"
	BacklogOldest    = "dagen.backlog.oldest_queued_age"
)

// Outcome labels beside the store's outcomes.
const (
	OutcomeRetried  = "retried"
	OutcomeTimedOut = "timed_out"
)

// durations are the bucket bounds of the duration histograms, in seconds:
// a millisecond to ten minutes, steps being anything from a map lookup to
// a report.
var durations = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600}

// sizes are the bucket bounds of the batch size histograms.
var sizes = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}

// Meters records the engine's metrics. Its methods are safe for
// concurrent use.
type Meters struct {
	runsStarted, runsFinished, steps, storeErrors metric.Int64Counter
	stepDuration, queueWait, claimDuration        metric.Float64Histogram
	completeDuration, scheduleLag                 metric.Float64Histogram
	claimBatch, completeBatch                     metric.Int64Histogram

	// attrs caches the attribute sets by their labels: building a set
	// sorts and allocates, once per combination instead of once a step.
	attrs sync.Map // labels -> metric.MeasurementOption
}

// labels keys a cached attribute set; unused fields are empty.
type labels struct{ workflow, step, outcome, status, op string }

// New makes the instruments on mp's meter.
func New(mp metric.MeterProvider) (*Meters, error) {
	m := mp.Meter(Scope)
	var errs []error
	c := func(name, desc, unit string) metric.Int64Counter {
		i, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return i
	}
	h := func(name, desc string) metric.Float64Histogram {
		i, err := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durations...))
		errs = append(errs, err)
		return i
	}
	n := func(name, desc string) metric.Int64Histogram {
		i, err := m.Int64Histogram(name, metric.WithDescription(desc), metric.WithUnit("{task}"), metric.WithExplicitBucketBoundaries(sizes...))
		errs = append(errs, err)
		return i
	}
	ms := &Meters{
		runsStarted:      c(RunsStarted, "Runs started, by workflow.", "{run}"),
		runsFinished:     c(RunsFinished, "Runs finished by a step's completion, by workflow and status.", "{run}"),
		steps:            c(StepAttempts, "Step attempts executed, by workflow, step and outcome.", "{attempt}"),
		storeErrors:      c(StoreErrors, "Failed store calls of the worker's loops, by operation.", "{error}"),
		stepDuration:     h(StepDuration, "How long a step attempt took, by workflow, step and outcome."),
		queueWait:        h(StepQueueWait, "How long a claimed task waited on its worker for an executor, by workflow."),
		claimDuration:    h(ClaimDuration, "How long a claim took."),
		completeDuration: h(CompleteDuration, "How long a batch of results took to store."),
		scheduleLag:      h(ScheduleLag, "How late a schedule fired after it was due, by workflow."),
		claimBatch:       n(ClaimBatch, "Tasks a claim returned."),
		completeBatch:    n(CompleteBatch, "Results a completion stored."),
	}
	return ms, errors.Join(errs...)
}

func (m *Meters) opt(l labels) metric.MeasurementOption {
	if o, ok := m.attrs.Load(l); ok {
		return o.(metric.MeasurementOption)
	}
	kv := make([]attribute.KeyValue, 0, 3)
	if l.workflow != "" {
		kv = append(kv, attribute.String("workflow", l.workflow))
	}
	if l.step != "" {
		kv = append(kv, attribute.String("step", l.step))
	}
	if l.outcome != "" {
		kv = append(kv, attribute.String("outcome", l.outcome))
	}
	if l.status != "" {
		kv = append(kv, attribute.String("status", l.status))
	}
	if l.op != "" {
		kv = append(kv, attribute.String("op", l.op))
	}
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	m.attrs.Store(l, o)
	return o
}

// RunsStarted counts n runs of workflow started.
func (m *Meters) RunsStarted(workflow string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.runsStarted.Add(context.Background(), int64(n), m.opt(labels{workflow: workflow}))
}

// RunFinished counts a run of workflow finished with status.
func (m *Meters) RunFinished(workflow, status string) {
	if m == nil {
		return
	}
	m.runsFinished.Add(context.Background(), 1, m.opt(labels{workflow: workflow, status: status}))
}

// Step records an attempt of a step and how long it took.
func (m *Meters) Step(workflow, step, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	o := m.opt(labels{workflow: workflow, step: step, outcome: outcome})
	m.steps.Add(context.Background(), 1, o)
	m.stepDuration.Record(context.Background(), took.Seconds(), o)
}

// QueueWait records how long a claimed task of workflow waited for an
// executor.
func (m *Meters) QueueWait(workflow string, d time.Duration) {
	if m == nil {
		return
	}
	m.queueWait.Record(context.Background(), d.Seconds(), m.opt(labels{workflow: workflow}))
}

// Claimed records a claim of n tasks that took d.
func (m *Meters) Claimed(n int, d time.Duration) {
	if m == nil {
		return
	}
	m.claimBatch.Record(context.Background(), int64(n))
	m.claimDuration.Record(context.Background(), d.Seconds())
}

// Completed records a completion of n results that took d.
func (m *Meters) Completed(n int, d time.Duration) {
	if m == nil {
		return
	}
	m.completeBatch.Record(context.Background(), int64(n))
	m.completeDuration.Record(context.Background(), d.Seconds())
}

// StoreError counts a failed store call of op.
func (m *Meters) StoreError(op string) {
	if m == nil {
		return
	}
	m.storeErrors.Add(context.Background(), 1, m.opt(labels{op: op}))
}

// ScheduleLag records a schedule of workflow that fired lag after it was
// due.
func (m *Meters) ScheduleLag(workflow string, lag time.Duration) {
	if m == nil {
		return
	}
	m.scheduleLag.Record(context.Background(), max(lag, 0).Seconds(), m.opt(labels{workflow: workflow}))
}

// Finished counts the runs that a batch of stored results finished:
// workflows[i] is the workflow of outs[i]'s run.
func (m *Meters) Finished(workflows []string, outs []store.CompletionOutcome) {
	if m == nil {
		return
	}
	for i, o := range outs {
		if o.Outcome != store.OutcomeStale && o.RunStatus.Terminal() {
			m.RunFinished(workflows[i], string(o.RunStatus))
		}
	}
}

// Outcome is the label of an attempt's result: the store's outcome, but
// "retried" for a retry and "timed_out" for an attempt its step's timeout
// failed.
func Outcome(o store.Outcome, timedOut bool) string {
	switch {
	case timedOut && (o == store.OutcomeRetry || o == store.OutcomeFailed):
		return OutcomeTimedOut
	case o == store.OutcomeRetry:
		return OutcomeRetried
	}
	return string(o)
}
