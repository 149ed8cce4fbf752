package not_a_step

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

func helper(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after=helper,Receipt
func Charge(ctx context.Context, o Order, v Validation) (Receipt, error) { return Receipt{}, nil }
