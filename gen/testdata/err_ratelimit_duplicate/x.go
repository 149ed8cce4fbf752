package ratelimit_duplicate

import "context"

// Two constants of one value declare the same rate limit twice.

// Stripe is the first.
//
//dag:ratelimit rate=100/s
const Stripe = "stripe"

// Payments is the second.
//
//dag:ratelimit rate=10/s
const Payments = "stripe"

//dag:workflow
type Order struct{ ID string }

//dag:step ratelimit=stripe
func Charge(ctx context.Context, o Order) error { return nil }
