package bad_context

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Fine(ctx context.Context, o Order) error { return nil }

//dag:step
func Validate(o Order) (Validation, error) { return Validation{}, nil }

//dag:step
func Charge(ctx any, o Order) (Receipt, error) { return Receipt{}, nil }

//dag:step
func Ship() error { return nil }
