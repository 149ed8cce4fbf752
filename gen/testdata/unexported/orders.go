// Package unexported has a workflow whose input type is unexported: its
// generated API is unexported too (newOrderWorkflow, orderWorkflow, …).
package unexported

import (
	"context"
)

//go:generate go run github.com/dagenhq/dagen/cmd/dagen

//dag:workflow
type order struct {
	ID     string
	Amount int64
}

type receipt struct {
	Charged int64
}

//dag:step
func validate(ctx context.Context, o order) (bool, error) { return o.Amount > 0, nil }

//dag:step after=validate skip=invalid
func charge(ctx context.Context, o order, ok bool) (receipt, error) {
	return receipt{Charged: o.Amount}, nil
}

func invalid(ok bool) bool { return !ok }
