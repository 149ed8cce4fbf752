// Package flow exercises concurrency caps and run deadlines on
// //dag:workflow: a cap on all runs with a deadline (concurrency= alone,
// timeout=), a cap per value of a nested path to a named string type
// (per=Customer.ID), and a cap per value of an integer renamed by its json
// tag, combined with an idempotency key (per= with key=).
package flow

import (
	"context"
	"fmt"
)

// Report runs at most two at a time, of all tenants, and fails when it has
// not finished 90 minutes after its trigger.
//
//dag:workflow concurrency=2 timeout=90m
type Report struct {
	Month string
}

// Render renders the report.
//
//dag:step
func Render(ctx context.Context, r Report) (string, error) { return "report " + r.Month, nil }

// Order runs one at a time per customer.
//
//dag:workflow concurrency=1 per=Customer.ID
type Order struct {
	Customer Customer
	Amount   int64
}

// Customer places orders.
type Customer struct {
	ID   CustomerID
	Name string
}

// CustomerID is a named string type: the concurrency key converts it.
type CustomerID string

// Charge charges the order.
//
//dag:step
func Charge(ctx context.Context, o Order) (int64, error) { return o.Amount, nil }

// Transfer runs at most three at a time per account, an integer stored
// under "account", and is keyed by its reference: per= and key= name
// different fields.
//
//dag:workflow key=Ref concurrency=3 per=Account
type Transfer struct {
	Ref     string
	Account int64 `json:"account"`
	Cents   int64
}

// Book books the transfer.
//
//dag:step
func Book(ctx context.Context, t Transfer) (string, error) {
	return fmt.Sprintf("%s: %d to %d", t.Ref, t.Cents, t.Account), nil
}
