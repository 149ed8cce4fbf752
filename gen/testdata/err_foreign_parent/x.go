package foreign_parent

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:workflow
type Refund struct{ Amount int }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after=Validate
func Repay(ctx context.Context, r Refund, v Validation) (Receipt, error) { return Receipt{}, nil }
