package key_lost

import (
	"context"
	"time"
)

//dag:workflow key=ref
type Order struct {
	ref    string
	Amount int64
}

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

//dag:workflow key=Customer.Ref
type Refund struct {
	Customer Customer
}

type Customer struct {
	Ref string `json:"-"`
}

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

// Another field takes ID's JSON name.
//
//dag:workflow key=ID
type Claim struct {
	ID  string
	Key string `json:"ID"`
}

//dag:step
func File(ctx context.Context, c Claim) error { return nil }

// An unexported field of another package's struct.
//
//dag:workflow key=At.wall
type Visit struct {
	At time.Time
}

//dag:step
func Greet(ctx context.Context, v Visit) error { return nil }

// A field of the input itself takes the JSON name of the promoted ID.
//
//dag:workflow key=ID
type Return struct {
	Inner
	Key string `json:"ID"`
}

type Inner struct{ ID string }

//dag:step
func Accept(ctx context.Context, r Return) error { return nil }

// Two tagged fields at the same depth share a JSON name: both are left out.
//
//dag:workflow key=ID
type Parcel struct {
	Label
	Tracking
}

type Label struct {
	ID string `json:"id"`
}

type Tracking struct {
	Ref string `json:"id"`
}

//dag:step
func Weigh(ctx context.Context, p Parcel) error { return nil }
