package store

import (
	"context"
	"errors"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Signal waits (//dag:signal). A KindSignal task is queued and claimed like
// a step once its parents are resolved; the engine skips it (the cascade)
// or hands it back with OutcomeAwait. The store then completes it at once
// with the payload of a signal held for it, or makes it AWAITING until a
// signal arrives ([Signaler.SendSignal]) or its wait ends (a timer of its
// own), when it is SKIPPED with the result's Reason. An AWAITING task
// holds no lease and no worker.
const (
	// KindSignal is a signal wait: its output is the payload of the
	// signal that resolved it.
	KindSignal TaskKind = "signal"
	// TaskAwaiting is a signal wait waiting for its signal.
	TaskAwaiting TaskStatus = "AWAITING"
	// OutcomeAwait makes a KindSignal task wait for its signal: until
	// TaskResult.WakeAt (or the store's now plus Delay) when either is
	// set, for ever otherwise; TaskResult.Reason is the reason it is
	// SKIPPED with when the wait ends without a signal.
	OutcomeAwait Outcome = "await"
	// EventAwaiting says a signal wait began; its detail is when it ends,
	// or empty for a wait without end.
	EventAwaiting EventType = "AWAITING"
	// EventSignalled says a signal arrived for the task; its detail says
	// whether it resolved the wait or is held until the wait begins.
	EventSignalled EventType = "SIGNALLED"
)

// Signal details, the Detail of an EventSignalled.
const (
	SignalDelivered = "delivered"
	SignalHeld      = "held until the wait begins"
)

// Signaler, part of [Triggers], delivers signals to the signal waits of
// runs.
type Signaler interface {
	// SendSignal delivers payload to the signal wait step of run id, in
	// one unit with what it causes. An AWAITING wait completes with the
	// payload as its output (its children count down, its timer goes) and
	// SendSignal reports true. A wait not reached yet (PENDING, QUEUED or
	// RUNNING) holds the payload, once, and completes with it when it
	// would begin to wait; SendSignal reports false. Concurrent sends to
	// one wait are applied one at a time: exactly one resolves or is held.
	//
	// Errors: an unknown run wraps [ErrRunNotFound]; a step that is not a
	// signal wait of the run wraps [ErrNotSignal]; a wait resolved
	// already (completed, skipped or cancelled) wraps [ErrSignalResolved];
	// a wait holding a signal already wraps [ErrSignalHeld]; a finished
	// run wraps [ErrRunFinished] (checked after the two before).
	SendSignal(ctx context.Context, id dag.RunID, step string, payload []byte) (delivered bool, err error)
}

// Errors of SendSignal.
var (
	ErrNotSignal      = errors.New("not a signal wait of the run")
	ErrSignalResolved = errors.New("signal wait already resolved")
	ErrSignalHeld     = errors.New("a signal is already held for this wait")
	ErrRunFinished    = errors.New("run already finished")
)
