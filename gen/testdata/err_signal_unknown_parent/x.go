package signal_unknown_parent

import (
	"context"
)

//dag:workflow
type Expense struct{ ID string }

type Submission struct{ Ref string }

//dag:step
func Submit(ctx context.Context, e Expense) (Submission, error) { return Submission{}, nil }

// A typo in after= of a signal.
//
//dag:signal after=Submt
type Approval struct{ By string }

// A wait stored as Paid, named by its type in after=.
//
//dag:signal after=Submit name=Paid
type Payment struct{ Cents int64 }

// A child naming a signal wait with a typo.
//
//dag:step after=Submit,Aproval
func Decide(ctx context.Context, e Expense, s Submission, a Approval) error { return nil }

//dag:step after=Payment
func Book(ctx context.Context, e Expense, p Payment) error { return nil }
