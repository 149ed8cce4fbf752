package per_type

import "context"

//dag:workflow concurrency=1 per=Amount
type Order struct {
	ID     string
	Amount float64
}

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

//dag:workflow concurrency=1 per=Customer
type Refund struct {
	Customer Customer
}

type Customer struct {
	ID string
}

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }
