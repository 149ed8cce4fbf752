package needless_maybe

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

//dag:step after=Validate skip=invalid
func Charge(ctx context.Context, o Order, v dag.Maybe[Validation]) (Receipt, error) {
	return Receipt{}, nil
}

//dag:step after=Charge
func Ship(ctx context.Context, o Order, r Receipt) (Receipt, error) { return r, nil }

//dag:step after=Ship
func Notify(ctx context.Context, o Order, r dag.Maybe[Receipt]) error { return nil }

func invalid(o Order) bool { return o.Amount <= 0 }
