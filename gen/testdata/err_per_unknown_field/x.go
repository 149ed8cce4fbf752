package per_unknown_field

import "context"

//dag:workflow concurrency=1 per=Customer.Idd
type Order struct {
	Customer Customer
	Amount   int64
}

type Customer struct {
	ID   string
	Name string
}

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

// The JSON name is not the Go name: did you mean Account?
//
//dag:workflow concurrency=1 per=account
type Transfer struct {
	Account int64 `json:"account"`
}

//dag:step
func Book(ctx context.Context, t Transfer) error { return nil }

// Nothing close.
//
//dag:workflow concurrency=2 per=Region
type Parcel struct{ Weight int }

//dag:step
func Weigh(ctx context.Context, p Parcel) error { return nil }
