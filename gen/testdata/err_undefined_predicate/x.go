package undefined_predicate

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after=Validate skip=invlid,Amount,nothingLikeIt
func Charge(ctx context.Context, o Order, v Validation) (Receipt, error) { return Receipt{}, nil }

var Amount = 3

func invalid(v Validation) bool { return !v.OK }
