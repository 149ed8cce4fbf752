package dag

import (
	"errors"
	"fmt"
)

// Failure describes why a run failed. It is what a workflow's onfailure
// handler receives alongside the run's input.
type Failure struct {
	RunID   RunID  // the failed run
	Step    string // stored name of the step that failed for good
	Attempt int    // the attempt that failed (1-based)
	Message string // the step's error text
	// InputError is set when the run's input could not be decoded for the
	// handler: the handler got the zero input. It says why, for instance
	// when the input type changed incompatibly between deploys. The
	// handler runs all the same, so that a failed run is never left
	// unreported.
	InputError string
}

// DeadlineStep is Failure.Step when the run failed because it ran past
// its deadline (timeout= on the workflow): no step failed, and Message
// says "timed out after 48h".
const DeadlineStep = "@deadline"

// TimedOut reports whether the run failed at its deadline.
func (f Failure) TimedOut() bool { return f.Step == DeadlineStep }

// Error returns the failure as an error message. It ends with the input's
// decode error when the handler got the zero input.
func (f Failure) Error() string {
	msg := fmt.Sprintf("step %s failed on attempt %d: %s", f.Step, f.Attempt, f.Message)
	if f.TimedOut() {
		msg = "run " + f.Message
	}
	if f.InputError != "" {
		msg += "; the run input did not decode, the handler got the zero input: " + f.InputError
	}
	return msg
}

// terminalError marks an error as not worth retrying.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// Terminal wraps err so the engine fails the step at once instead of
// retrying it. Terminal(nil) returns nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or any error it wraps, came from [Terminal].
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}
