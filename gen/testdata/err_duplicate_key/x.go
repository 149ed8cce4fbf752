package duplicate_key

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step retry=1 retry=2
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }
