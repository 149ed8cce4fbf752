// Package stale has a dag_gen.go from before Validate was renamed Check
// and Charge changed signature: loading must ignore the errors in it.
package stale

import "context"

// Order is the input.
//
//dag:workflow
type Order struct{ Amount int }

// Check replaced Validate.
//
//dag:step
func Check(ctx context.Context, o Order) (bool, error) { return o.Amount > 0, nil }

// Charge now takes the verdict of Check.
//
//dag:step after=Check
func Charge(ctx context.Context, o Order, ok bool) (int, error) { return o.Amount, nil }
