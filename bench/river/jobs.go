package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
)

// noopArgs are the arguments of the benchmark's no-op job. Num only makes each
// job's args distinct, as in River's own benchmark.
type noopArgs struct {
	Num int `json:"num"`
}

// Kind is River's job kind for noopArgs.
func (noopArgs) Kind() string { return "noop" }

// noopWorker does nothing but count its calls, as a cross-check of the
// completion events the benchmark times.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	calls *atomic.Int64
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.calls.Add(1)
	return nil
}

// tenantAArgs are tenant A's jobs in the fairness workload: a kind of
// their own, so their completion events are told apart from B's. River
// fetches by priority, then scheduled time, then id, whatever the kind, so
// they queue behind B's jobs as any later job would.
type tenantAArgs struct {
	Num int `json:"num"`
}

// Kind is River's job kind for tenantAArgs.
func (tenantAArgs) Kind() string { return "noop_a" }

// tenantAWorker is noopWorker for tenant A's jobs; it also notes when each
// job started working, by job id, so the fairness workload can tell the
// wait for a worker from the wait for the completion to be stored.
type tenantAWorker struct {
	river.WorkerDefaults[tenantAArgs]
	calls   *atomic.Int64
	started *sync.Map // job id -> time.Time
}

func (w *tenantAWorker) Work(_ context.Context, job *river.Job[tenantAArgs]) error {
	w.started.Store(job.ID, time.Now())
	w.calls.Add(1)
	return nil
}
