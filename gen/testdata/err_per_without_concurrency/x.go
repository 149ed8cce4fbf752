package per_without_concurrency

import "context"

//dag:workflow per=CustomerID
type Order struct {
	CustomerID string
	Amount     int64
}

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

// key= is no cap either.
//
//dag:workflow key=Ref per=Customer.ID timeout=1h
type Refund struct {
	Ref      string
	Customer Customer
}

type Customer struct{ ID string }

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

// A per= path that is wrong too is reported as well.
//
//dag:workflow per=Custmer
type Claim struct{ Customer string }

//dag:step
func File(ctx context.Context, c Claim) error { return nil }
