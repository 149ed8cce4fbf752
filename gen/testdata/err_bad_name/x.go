package bad_name

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step name="@validate"
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step
func _(ctx context.Context, o Order) error { return nil }

//dag:workflow
type _ struct{ ID string }
