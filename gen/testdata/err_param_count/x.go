package param_count

import (
	"context"
	"time"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after=Validate
func Charge(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }

//dag:step after=Charge
func Ship(ctx context.Context, o Order, r Receipt, extra Validation) error { return nil }

//dag:sleep after=Validate
func Hold(ctx context.Context, o Order, v Validation) (time.Duration, error) { return 0, nil }

//dag:step after=Hold
func Notify(ctx context.Context, o Order, v Validation) error { return nil }
