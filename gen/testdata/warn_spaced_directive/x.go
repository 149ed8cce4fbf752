package spaced_directive

import (
	"context"
	"time"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

// dag:step after=Validate
func Charge(ctx context.Context, o Order, v Validation) (Receipt, error) { return Receipt{}, nil }

/* dag:sleep */
func Later(ctx context.Context, o Order) (time.Duration, error) { return 0, nil }

// dag: this is prose about the dag package, not a directive.
//
//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }
