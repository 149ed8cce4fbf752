package empty_value

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step name=""
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after= retry=1
func Charge(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }

//dag:step after=Validate,,Charge skip=,
func Ship(ctx context.Context, o Order, v Validation, r Receipt) error { return nil }
