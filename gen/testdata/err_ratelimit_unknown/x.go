package ratelimit_unknown

import "context"

// ratelimit= names a //dag:ratelimit of the package by its value.

//dag:ratelimit rate=100/s
const StripeAPI = "stripe"

//dag:workflow
type Order struct{ ID string }

//dag:step ratelimit=strpe
func Charge(ctx context.Context, o Order) error { return nil }

//dag:step ratelimit=StripeAPI
func Refund(ctx context.Context, o Order) error { return nil }

//dag:step ratelimit=mail
func Notify(ctx context.Context, o Order) error { return nil }
