package variadic

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after=Validate
func Charge(ctx context.Context, o Order, vs ...Validation) (Receipt, error) { return Receipt{}, nil }
