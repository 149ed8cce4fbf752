package ambiguous_predicate_param

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Primary(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step
func Secondary(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after=Primary,Secondary skip=invalid
func Charge(ctx context.Context, o Order, a, b Validation) (Receipt, error) { return Receipt{}, nil }

func invalid(v Validation) bool { return !v.OK }
