package repeated_key_cascade

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

//dag:step after=Validate after=Price skip=cheap
func Charge(ctx context.Context, o Order, v Validation, q Quote) error { return nil }

//dag:step after=Validate skip=invalid skip=small
func Ship(ctx context.Context, o Order, v Validation) error { return nil }

//dag:step after=Charge retry=1 retry=2 retry=3
func Notify(ctx context.Context, o Order) error { return nil }

func cheap(q Quote) bool        { return q.Price == 0 }
func small(o Order) bool        { return o.Amount < 10 }
func invalid(v Validation) bool { return !v.OK }
