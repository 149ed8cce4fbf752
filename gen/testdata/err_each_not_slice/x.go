package each_not_slice

import (
	"context"
	"time"
)

//dag:workflow
type Order struct{ ID string }

type Validation struct{ OK bool }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step
func Audit(ctx context.Context, o Order) error { return nil }

//dag:sleep
func Wait(ctx context.Context, o Order) (time.Duration, error) { return time.Hour, nil }

//dag:step
func Load(ctx context.Context, o Order) ([]byte, error) { return nil, nil }

//dag:step after=Validate each=Validate
func Charge(ctx context.Context, o Order, v Validation) error { return nil }

//dag:step after=Audit each=Audit
func Check(ctx context.Context, o Order) error { return nil }

//dag:step after=Wait each=Wait
func Remind(ctx context.Context, o Order) error { return nil }

//dag:step after=Load each=Load
func Parse(ctx context.Context, o Order, b byte) error { return nil }

// Chained: Charge is mapped, but returns only error, so it gives no slice.
//
//dag:step after=Charge each=Charge
func Ship(ctx context.Context, o Order) error { return nil }
