package signal_no_after

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

// With two workflows, a wait without after= belongs to neither.
//
//dag:signal timeout=24h
type Approval struct{ By string }
