// Package twomodels uses two packages named model: the generated file
// aliases both by their paths, so neither model.Receipt is ambiguous.
package twomodels

import (
	"context"

	billing "github.com/dagenhq/dagen/gen/testdata/twomodels/billing/model"
	"github.com/dagenhq/dagen/gen/testdata/twomodels/shop/model"
)

// Purchase is the workflow input.
//
//dag:workflow
type Purchase struct {
	Item  string
	Cents int64
}

// Hand hands the customer a shop receipt.
//
//dag:step
func Hand(ctx context.Context, p Purchase) (model.Receipt, error) {
	return model.Receipt{Item: p.Item}, nil
}

// Bill records the charge in billing's model.
//
//dag:step
func Bill(ctx context.Context, p Purchase) (billing.Receipt, error) {
	return billing.Receipt{Cents: p.Cents}, nil
}

// Match checks that both receipts are for the purchase.
//
//dag:step after=Hand,Bill
func Match(ctx context.Context, p Purchase, shop model.Receipt, bill billing.Receipt) (bool, error) {
	return shop.Item == p.Item && bill.Cents == p.Cents, nil
}
