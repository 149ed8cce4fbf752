package signal_not_a_type

import (
	"context"
)

//dag:workflow
type Expense struct{ ID string }

//dag:step
func Submit(ctx context.Context, e Expense) error { return nil }

// A signal is a type: the payload a run waits for.
//
//dag:signal after=Submit
func Approve(ctx context.Context, e Expense) error { return nil }

//dag:signal after=Submit
var approvals = 0

// Generic payloads cannot be named by the generated code.
//
//dag:signal after=Submit
type Note[T any] struct{ Body T }

// A signal wait cannot be mapped, nor predicated.
//
//dag:signal after=Submit each=Submit skip=never
type Receipt struct{ URL string }
