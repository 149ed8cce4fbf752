package no_steps

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:workflow
type Refund struct{}

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }
