package main

import (
	"context"
	"sync/atomic"

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
