package unknown_workflow

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

type Refund struct{}

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step
func Charge(ctx context.Context, r Refund) (Receipt, error) { return Receipt{}, nil }

//dag:step
func Ship(ctx context.Context, o *Order) error { return nil }

//dag:step
func Lonely(ctx context.Context) error { return nil }
