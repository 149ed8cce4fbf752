package spaced_list

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Quote struct{ Price int }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step
func Price(ctx context.Context, o Order) (Quote, error) { return Quote{}, nil }

//dag:step after=Validate, Price
func Charge(ctx context.Context, o Order, v Validation, q Quote) error { return nil }

//dag:step after=Validate skip=small, invalid retry=2
func Ship(ctx context.Context, o Order, v Validation) error { return nil }

//dag:step after=Validate,	Price
func Tabbed(ctx context.Context, o Order, v Validation, q Quote) error { return nil }

func small(o Order) bool        { return o.Amount < 10 }
func invalid(v Validation) bool { return !v.OK }

//dag:step after=Validate , Price,Charge
func Spread(ctx context.Context, o Order, v Validation, q Quote) error { return nil }
