package signal_two_workflows

import (
	"context"
)

//dag:workflow
type Expense struct{ ID string }

//dag:workflow
type Refund struct{ ID string }

//dag:step
func Submit(ctx context.Context, e Expense) error { return nil }

//dag:step
func Repay(ctx context.Context, r Refund) error { return nil }

// Parents in two workflows: the wait belongs to the first one's.
//
//dag:signal after=Submit,Repay
type Approval struct{ By string }

// A child in the other workflow.
//
//dag:step after=Approval
func Settle(ctx context.Context, r Refund, a Approval) error { return nil }
