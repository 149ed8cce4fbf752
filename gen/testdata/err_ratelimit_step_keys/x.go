package ratelimit_step_keys

import "context"

// units= and per= go with ratelimit=; units= is a positive number no
// larger than the burst; per= follows the path rules of key=.

//dag:ratelimit rate=100/s burst=5
const Stripe = "stripe"

//dag:workflow
type Order struct {
	Customer Customer
	Amount   float64
}

type Customer struct {
	ID string
}

//dag:step units=2 per=Customer.ID
func Charge(ctx context.Context, o Order) error { return nil }

//dag:step ratelimit=stripe units=0
func Refund(ctx context.Context, o Order) error { return nil }

//dag:step ratelimit=stripe units=two
func Capture(ctx context.Context, o Order) error { return nil }

//dag:step ratelimit=stripe units=6
func Payout(ctx context.Context, o Order) error { return nil }

//dag:step ratelimit=stripe per=Customer.Idd
func Notify(ctx context.Context, o Order) error { return nil }

//dag:step ratelimit=stripe per=Amount
func Audit(ctx context.Context, o Order) error { return nil }
