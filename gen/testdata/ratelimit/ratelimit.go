// Package ratelimit exercises rate limits and run priorities: limits
// declared on string constants, alone and in a group, with and without
// burst=, one unused; steps taking tokens from them with units= and per=
// (a string path and an integer field), a limit used by two steps listed
// once in the definition, and a workflow with priority=.
package ratelimit

import (
	"context"
	"fmt"
)

// Stripe allows 100 calls a second, 20 at once after a quiet while.
//
//dag:ratelimit rate=100/s burst=20
const Stripe = "stripe"

// Mail allows 6000 calls a minute.
//
//dag:ratelimit rate=6000/m
const Mail = "mail"

const (
	// Geo allows one call every two seconds.
	//
	//dag:ratelimit rate=0.5/s
	Geo = "geo"

	// Fax is declared and used by no step.
	//
	//dag:ratelimit rate=10/h burst=2
	Fax = "fax"
)

// Order runs at priority 7.
//
//dag:workflow priority=7
type Order struct {
	Customer Customer
	Amount   int64
}

// Customer places orders.
type Customer struct {
	ID     string
	Region int
}

// Charge takes two tokens of stripe per attempt, from the bucket of the
// order's customer.
//
//dag:step ratelimit=stripe units=2 per=Customer.ID retry=2
func Charge(ctx context.Context, o Order) (int64, error) { return o.Amount, nil }

// Notify takes one token of mail, from one bucket for all runs.
//
//dag:step after=Charge ratelimit=mail
func Notify(ctx context.Context, o Order, charged int64) (string, error) {
	return fmt.Sprintf("charged %d", charged), nil
}

// Report takes one token of stripe, from the bucket of the customer's
// region: units=1 is the default.
//
//dag:step after=Charge ratelimit=stripe units=1 per=Customer.Region
func Report(ctx context.Context, o Order, charged int64) error { return nil }

// Audit has the default priority and a limit per region.
//
//dag:workflow
type Audit struct {
	Region uint32
}

// Locate takes one token of geo from the bucket of the region.
//
//dag:step ratelimit=geo per=Region
func Locate(ctx context.Context, a Audit) (string, error) {
	return fmt.Sprint("region ", a.Region), nil
}
