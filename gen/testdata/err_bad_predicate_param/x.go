package bad_predicate_param

import (
	"context"
	"github.com/dagenhq/dagen/runtime/dag"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step
func Price(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }

//dag:step after=Validate,Price skip=costly
func Charge(ctx context.Context, o Order, v Validation, r dag.Maybe[Receipt]) (int, error) {
	return 0, nil
}

func costly(ctx context.Context, o Order, r Receipt, n int) (bool, error) { return false, nil }
