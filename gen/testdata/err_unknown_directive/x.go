package unknown_directive

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:stpe
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:retry
func Other(ctx context.Context, o Order) error { return nil }

//dag:step
func Charge(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }
