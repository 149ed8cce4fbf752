package signal_bad_timeout

import (
	"context"
)

//dag:workflow
type Expense struct{ ID string }

//dag:step
func Submit(ctx context.Context, e Expense) error { return nil }

//dag:signal after=Submit timeout=0
type Approval struct{ By string }

//dag:signal after=Submit timeout=-1h
type Payment struct{ Cents int64 }

//dag:signal after=Submit timeout=3days
type Receipt struct{ URL string }
