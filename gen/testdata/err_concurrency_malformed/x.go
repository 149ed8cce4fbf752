package concurrency_malformed

import "context"

//dag:workflow concurrency=0
type Order struct{ ID string }

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

//dag:workflow concurrency=-1
type Refund struct{ ID string }

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

//dag:workflow concurrency=two
type Claim struct{ ID string }

//dag:step
func File(ctx context.Context, c Claim) error { return nil }

//dag:workflow concurrency=1.5
type Visit struct{ ID string }

//dag:step
func Greet(ctx context.Context, v Visit) error { return nil }

// A bad cap is reported once: per= is not blamed for it.
//
//dag:workflow concurrency=0 per=Customer
type Parcel struct{ Customer string }

//dag:step
func Weigh(ctx context.Context, p Parcel) error { return nil }
