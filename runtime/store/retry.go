package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Retrier, part of [Admin], retries a finished run.
type Retrier interface {
	// RetryRun resets tasks of a finished run, chosen by r.Mode, and puts
	// the run back to RUNNING, all in one unit under the run's lock:
	//
	//   - only a FAILED or CANCELLED run may be retried, and a COMPLETED
	//     one with RetryFrom or RetryAll; any other is an error wrapping
	//     [ErrNotRetryable] that says why. RetryFrom with a step the run
	//     does not have is an error wrapping [ErrUnknownStep]. A retry
	//     that would leave a FAILED or CANCELLED task as it is (from a
	//     step that is not upstream of it) is refused too, wrapping
	//     [ErrNotRetryable]: the run could never complete;
	//   - a reset task becomes PENDING with its pending parents counted
	//     again from its parents' statuses (a parent that keeps COMPLETED
	//     or SKIPPED counts as resolved), its output, error and reason
	//     cleared; a reset task whose parents are all resolved is
	//     enqueued. Tasks not reset keep their status and output;
	//   - the onfailure task, if any, is reset to PENDING too, so that it
	//     runs again if the retried run fails again;
	//   - the run is RUNNING again, its pending tasks counted again, its
	//     failure and finish time cleared.
	//
	// Fencing: attempt numbers never go back. A reset task keeps its
	// attempt count and its next claim gets the next attempt, so a late
	// result of an attempt from before the retry is stale. Its attempt
	// budget starts over: the attempts before the retry do not count
	// against its MaxAttempts, and the RETRIED event carries the attempt
	// count at the retry (Event.Attempt) so that the engine counts retries
	// from there.
	//
	// Each reset task gets a RETRIED event whose detail names the operator
	// and the mode ("retried by alice: failed+downstream"), then a QUEUED
	// event when it is enqueued. An unknown id is an error wrapping
	// [ErrRunNotFound].
	RetryRun(ctx context.Context, id dag.RunID, r Retry) (RetryResult, error)
}

// Errors of [Retrier.RetryRun].
var (
	// ErrNotRetryable is returned when a run may not be retried in the
	// mode asked: it is still RUNNING, or it COMPLETED and the mode only
	// retries failures.
	ErrNotRetryable = errors.New("run not retryable")
	// ErrUnknownStep is returned by RetryFrom for a step the run does not
	// have. It wraps [ErrInvalidRun].
	ErrUnknownStep = fmt.Errorf("unknown step: %w", ErrInvalidRun)
)

// RetryMode says which tasks of a run [Retrier.RetryRun] resets.
type RetryMode string

// Retry modes.
const (
	// RetryFailed resets the FAILED and CANCELLED tasks.
	RetryFailed RetryMode = "failed"
	// RetryFailedDownstream resets the FAILED and CANCELLED tasks and
	// every task downstream of them.
	RetryFailedDownstream RetryMode = "failed+downstream"
	// RetryFrom resets Retry.From and every task downstream of it; it
	// may replay a COMPLETED run.
	RetryFrom RetryMode = "from"
	// RetryAll resets every task; it may replay a COMPLETED run.
	RetryAll RetryMode = "all"
)

// Valid reports whether m is one of the retry modes.
func (m RetryMode) Valid() bool {
	switch m {
	case RetryFailed, RetryFailedDownstream, RetryFrom, RetryAll:
		return true
	}
	return false
}

// ParseRetryMode parses "failed", "failed+downstream", "from=STEP" or
// "all" into a Retry without an operator.
func ParseRetryMode(s string) (Retry, error) {
	if step, ok := strings.CutPrefix(s, "from="); ok {
		if step == "" {
			return Retry{}, errors.New(`retry mode "from=" needs a step: from=STEP`)
		}
		return Retry{Mode: RetryFrom, From: step}, nil
	}
	m := RetryMode(s)
	if !m.Valid() || m == RetryFrom {
		return Retry{}, fmt.Errorf("unknown retry mode %q: want failed, failed+downstream, from=STEP or all", s)
	}
	return Retry{Mode: m}, nil
}

// Retry says how to retry a run.
type Retry struct {
	Mode RetryMode
	// From is the step RetryFrom starts at.
	From string
	// Operator names who retried, for the RETRIED events; empty is
	// "unknown".
	Operator string
}

// String is the mode as ParseRetryMode reads it.
func (r Retry) String() string {
	if r.Mode == RetryFrom {
		return "from=" + r.From
	}
	return string(r.Mode)
}

// Detail is the detail of the RETRIED events of r.
func (r Retry) Detail() string {
	op := r.Operator
	if op == "" {
		op = "unknown"
	}
	return "retried by " + op + ": " + r.String()
}

// RetryResult is what [Retrier.RetryRun] did.
type RetryResult struct {
	// Reset are the tasks reset, in the run's task order (the onfailure
	// task included when it was not PENDING).
	Reset []string
	// Enqueued are the reset tasks that were enqueued at once: those
	// whose parents are all resolved.
	Enqueued []string
}
