package generic

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step
func Charge[T any](ctx context.Context, o Order) (T, error) {
	var zero T
	return zero, nil
}

//dag:workflow
type Box[T any] struct{ V T }
