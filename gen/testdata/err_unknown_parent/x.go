package unknown_parent

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after=Validat
func Charge(ctx context.Context, o Order, v Validation) (Receipt, error) { return Receipt{}, nil }

//dag:step name="ship" after=Charge
func Ship(ctx context.Context, o Order, r Receipt) error { return nil }

//dag:step after=ship,Nowhere
func Notify(ctx context.Context, o Order) error { return nil }
