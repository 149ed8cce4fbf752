package param_type

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

//dag:step after=Validate
func Charge(ctx context.Context, o Order, r Receipt) (int, error) { return 0, nil }

//dag:step after=Validate,Price
func Ship(ctx context.Context, o Order, r Receipt, v Validation) error { return nil }

//dag:step after=Price
func Notify(ctx context.Context, o Order, r dag.Maybe[Validation]) error { return nil }
