// Package onfailure has an onfailure handler that records its calls, so a
// test can see that it runs once for a failed run even when the run's
// input no longer decodes into the input type.
package onfailure

import (
	"context"
	"errors"
	"sync"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Order is the workflow input.
//
//dag:workflow
type Order struct {
	ID     string
	Amount int
}

// Charge declines every order.
//
//dag:step
func Charge(ctx context.Context, o Order) (string, error) {
	return "", dag.Terminal(errors.New("declined"))
}

// Alert records its call in the Alerts of ctx.
//
//dag:onfailure
func Alert(ctx context.Context, o Order, f dag.Failure) error {
	if a, ok := ctx.Value(alertsKey{}).(*Alerts); ok {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.calls = append(a.calls, Call{Input: o, Failure: f})
	}
	return nil
}

// Call is one call of Alert.
type Call struct {
	Input   Order
	Failure dag.Failure
}

// Alerts collects the calls of Alert made with a context from WithAlerts.
type Alerts struct {
	mu    sync.Mutex
	calls []Call
}

type alertsKey struct{}

// WithAlerts returns a context that makes Alert record its calls in a.
func WithAlerts(ctx context.Context, a *Alerts) context.Context {
	return context.WithValue(ctx, alertsKey{}, a)
}

// Calls returns the calls recorded so far.
func (a *Alerts) Calls() []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Call(nil), a.calls...)
}
