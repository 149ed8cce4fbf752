package ratelimit_misplaced

import (
	"context"
	"time"
)

// Only a //dag:step can be rate limited: a child step, a sleep and a
// signal wait call no code of their own to limit.

//dag:ratelimit rate=100/s
const Stripe = "stripe"

//dag:workflow
type Order struct{ ID string }

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

//dag:child after=Charge ratelimit=stripe units=2
func Ship(ctx context.Context, o Order) (Shipment, error) { return Shipment{ID: o.ID}, nil }

//dag:sleep after=Charge ratelimit=stripe
func Hold(ctx context.Context, o Order) (time.Duration, error) { return time.Hour, nil }

//dag:signal after=Charge per=ID
type Approval struct{ By string }

//dag:workflow
type Shipment struct{ ID string }

//dag:step
func Deliver(ctx context.Context, s Shipment) error { return nil }
