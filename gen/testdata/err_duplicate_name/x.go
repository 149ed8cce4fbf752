package duplicate_name

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:workflow name="Order"
type Refund struct{}

//dag:step name="check"
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step name="check"
func Charge(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }

//dag:step name="Validate"
func Ship(ctx context.Context, o Order) error { return nil }

//dag:step
func Repay(ctx context.Context, r Refund) error { return nil }
