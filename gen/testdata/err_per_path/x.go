package per_path

import "context"

// The path rules of key= hold for per=, with messages that name per=.

//dag:workflow concurrency=1 per=Customer.ID
type Order struct {
	Customer *Customer
}

type Customer struct {
	ID  string
	Ref string `json:"-"`
}

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

//dag:workflow concurrency=1 per=Customer.Ref
type Refund struct {
	Customer Customer
}

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

//dag:workflow concurrency=1 per=Customer..ID
type Claim struct {
	Customer Customer
}

//dag:step
func File(ctx context.Context, c Claim) error { return nil }

//dag:workflow concurrency=1 per=Amount.Cents
type Visit struct {
	Amount int64
}

//dag:step
func Greet(ctx context.Context, v Visit) error { return nil }
