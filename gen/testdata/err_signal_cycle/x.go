package signal_cycle

import (
	"context"
)

//dag:workflow
type Expense struct{ ID string }

//dag:step after=Approval
func Submit(ctx context.Context, e Expense, a Approval) error { return nil }

// Waits for Submit, which waits for it.
//
//dag:signal after=Submit
type Approval struct{ By string }
