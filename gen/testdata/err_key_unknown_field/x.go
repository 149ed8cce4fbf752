package key_unknown_field

import "context"

//dag:workflow key=Customer.Idd
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

// Case only: did you mean ID?
//
//dag:workflow key=id
type Refund struct{ ID string }

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

// A field promoted from an embedded struct is a candidate too.
//
//dag:workflow key=Seqq
type Batch struct {
	Meta
	Items []string
}

type Meta struct{ Seq uint64 }

//dag:step
func Count(ctx context.Context, b Batch) error { return nil }

// Nothing close.
//
//dag:workflow key=Tracking
type Parcel struct{ Weight int }

//dag:step
func Weigh(ctx context.Context, p Parcel) error { return nil }

// A quoted path: the error points into the quotes.
//
//dag:workflow key="Customer.Nmae"
type Invoice struct{ Customer Customer }

//dag:step
func Send(ctx context.Context, i Invoice) error { return nil }
