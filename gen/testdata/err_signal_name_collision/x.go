package signal_name_collision

import (
	"context"
)

//dag:workflow
type Expense struct{ ID string }

//dag:step
func Submit(ctx context.Context, e Expense) error { return nil }

// The stored name of a step.
//
//dag:signal after=Submit name=Submit
type Approval struct{ By string }

//dag:step name=Check
func Review(ctx context.Context, e Expense) error { return nil }

// The name of a step's func, which after= would take for the step.
//
//dag:signal after=Submit name=Review
type Payment struct{ Cents int64 }

// Two waits of one type are named for their stored names in generated
// code, which must then be identifiers.
//
//dag:signal after=Submit name="refund-1"
type Refund struct{ Cents int64 }

//dag:signal after=Submit name=Refund2
type Refund2 = Refund

// A wait whose generated names are a step's: field Receipt of
// ExpenseResult, _dagenExpense_Receipt.
//
//dag:signal after=Submit name=Proof
type Receipt struct{ URL string }

//dag:step
func receipt(ctx context.Context, e Expense) (string, error) { return "", nil }

// A wait whose Send method is another wait's Send method in a
// transaction: SendVoidTx.
//
//dag:signal after=Submit
type Void struct{ By string }

//dag:signal after=Submit
type VoidTx struct{ By string }
