// Package flow is the workflow the crash test runs: a fan-out and fan-in,
// a durable sleep and a flaky step. A killed worker costs its tasks an
// attempt, so every step has retries to spare. Every step writes its start and end to
// an execution log so the test can audit what ran where.
package flow

//go:generate go run github.com/dagenhq/dagen/cmd/dagen

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Job is the input of the Crash workflow.
//
//dag:workflow name="crash"
type Job struct {
	N int
	// Work is how long each fan-out step takes, so that kills land
	// mid-step.
	Work time.Duration
	// Nap is how long the sleep step sleeps.
	Nap time.Duration
	// Stamp makes each execution of a fan-out step add a random number to
	// its output, so that a stored output names the execution that made
	// it (see EndRecorder): the failover test checks that a result of a
	// rolled-back history never lands.
	Stamp bool
}

// Recorder is what steps report their executions to. The worker puts one
// in the engine's context (see WithRecorder).
type Recorder interface {
	Record(ctx context.Context, step string, attempt int, phase string) error
}

// EndRecorder is a Recorder that also learns the output of an execution
// that ended well: when the worker's Recorder is one, run reports the end
// with RecordEnd instead of Record.
type EndRecorder interface {
	Recorder
	RecordEnd(ctx context.Context, step string, attempt int, output int) error
}

type recorderKey struct{}

// WithRecorder returns ctx carrying r for the steps.
func WithRecorder(ctx context.Context, r Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

// run records the start and end of a step's execution around work.
func run(ctx context.Context, step string, work func() (int, error)) (int, error) {
	info, _ := dag.Info(ctx)
	rec, ok := ctx.Value(recorderKey{}).(Recorder)
	if !ok {
		return 0, dag.Terminal(errors.New("no recorder in context"))
	}
	if err := rec.Record(ctx, step, info.Attempt, "start"); err != nil {
		return 0, err
	}
	n, err := work()
	var rerr error
	switch er, ok := rec.(EndRecorder); {
	case err != nil:
		rerr = rec.Record(ctx, step, info.Attempt, "fail")
	case ok:
		rerr = er.RecordEnd(ctx, step, info.Attempt, n)
	default:
		rerr = rec.Record(ctx, step, info.Attempt, "end")
	}
	if rerr != nil {
		return 0, rerr
	}
	return n, err
}

func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Start opens the run.
//
//dag:step retry=10 backoff=10ms
func Start(ctx context.Context, j Job) (int, error) {
	return run(ctx, "Start", func() (int, error) { return j.N, nil })
}

func fan(ctx context.Context, step string, j Job, n int) (int, error) {
	return run(ctx, step, func() (int, error) {
		out := n + 1
		if j.Stamp {
			out += 1 + rand.IntN(1<<30)
		}
		return out, pause(ctx, j.Work)
	})
}

// FanA is one of four parallel branches.
//
//dag:step after=Start retry=10 backoff=10ms
func FanA(ctx context.Context, j Job, n int) (int, error) { return fan(ctx, "FanA", j, n) }

// FanB is one of four parallel branches.
//
//dag:step after=Start retry=10 backoff=10ms
func FanB(ctx context.Context, j Job, n int) (int, error) { return fan(ctx, "FanB", j, n) }

// FanC is one of four parallel branches.
//
//dag:step after=Start retry=10 backoff=10ms
func FanC(ctx context.Context, j Job, n int) (int, error) { return fan(ctx, "FanC", j, n) }

// FanD is one of four parallel branches.
//
//dag:step after=Start retry=10 backoff=10ms
func FanD(ctx context.Context, j Job, n int) (int, error) { return fan(ctx, "FanD", j, n) }

// Join is the fan-in: it must run once, after all four branches.
//
//dag:step after=FanA,FanB,FanC,FanD retry=10 backoff=10ms
func Join(ctx context.Context, j Job, a, b, c, d int) (int, error) {
	return run(ctx, "Join", func() (int, error) { return a + b + c + d, nil })
}

// Nap sleeps durably.
//
//dag:sleep after=Join
func Nap(ctx context.Context, j Job, sum int) (time.Duration, error) {
	return j.Nap, nil
}

// Flaky fails its first attempt for every third job.
//
//dag:step after=Join,Nap retry=10 backoff=50ms
func Flaky(ctx context.Context, j Job, sum int) (int, error) {
	info, _ := dag.Info(ctx)
	return run(ctx, "Flaky", func() (int, error) {
		if j.N%3 == 0 && info.Attempt == 1 {
			return 0, errors.New("flaky: first attempt fails")
		}
		return sum * 2, nil
	})
}
