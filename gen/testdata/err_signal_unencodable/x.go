package signal_unencodable

import (
	"context"
)

//dag:workflow
type Expense struct{ ID string }

//dag:step
func Submit(ctx context.Context, e Expense) error { return nil }

// A payload JSON cannot carry.
//
//dag:signal after=Submit
type Approval struct {
	By   string
	Done chan bool
}

// An interface with methods: JSON writes it but cannot read it back.
//
//dag:signal after=Submit
type Verdict error
