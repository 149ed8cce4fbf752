package key_path

import "context"

// A path through a value that is no struct.
//
//dag:workflow key=Amount.Cents
type Order struct {
	ID     string
	Amount int64
}

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

// A path through a pointer, and a pointer at the end.
//
//dag:workflow key=Customer.ID
type Refund struct {
	Customer *Customer
}

type Customer struct{ ID string }

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

//dag:workflow key=Ref
type Claim struct{ Ref *string }

//dag:step
func File(ctx context.Context, c Claim) error { return nil }

// A field promoted through an embedded pointer.
//
//dag:workflow key=ID
type Return struct {
	*Customer
}

//dag:step
func Accept(ctx context.Context, r Return) error { return nil }

// A name promoted from two embedded structs at the same depth.
//
//dag:workflow key=ID
type Shipment struct {
	Billing
	Shipping
}

type Billing struct{ ID string }

type Shipping struct{ ID string }

//dag:step
func Ship(ctx context.Context, s Shipment) error { return nil }

// A method, not a field.
//
//dag:workflow key=Label
type Parcel struct{ Weight int }

func (p *Parcel) Label() string { return "parcel" }

//dag:step
func Weigh(ctx context.Context, p Parcel) error { return nil }

// An input that is no struct.
//
//dag:workflow key=ID
type Token string

//dag:step
func Spend(ctx context.Context, t Token) error { return nil }
