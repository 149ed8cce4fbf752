package name_collision

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
func validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

// OrderResult is a name dagen wants.
type OrderResult struct{}

// order is no clash: its API is unexported (orderWorkflow, …).
//
//dag:workflow
type order struct{}

//dag:step
func Lower(ctx context.Context, o order) error { return nil }

// NewOrder's handle type NewOrderWorkflow is Order's constructor.
//
//dag:workflow
type NewOrder struct{}

//dag:step
func Create(ctx context.Context, o NewOrder) error { return nil }
