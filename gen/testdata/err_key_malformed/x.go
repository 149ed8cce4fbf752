package key_malformed

import "context"

//dag:workflow key=.ID
type Order struct {
	ID       string
	Customer Customer
}

type Customer struct{ ID string }

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

//dag:workflow key=Customer..ID
type Refund struct{ Customer Customer }

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

//dag:workflow key=Customer.
type Claim struct{ Customer Customer }

//dag:step
func File(ctx context.Context, c Claim) error { return nil }

//dag:workflow key=Customer-ID
type Visit struct{ Customer Customer }

//dag:step
func Greet(ctx context.Context, v Visit) error { return nil }

//dag:workflow key=
type Parcel struct{ ID string }

//dag:step
func Weigh(ctx context.Context, p Parcel) error { return nil }

//dag:workflow key=ID key=Customer.ID
type Return struct {
	ID       string
	Customer Customer
}

//dag:step
func Accept(ctx context.Context, r Return) error { return nil }
