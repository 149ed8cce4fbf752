package duplicate_directive

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
//dag:sleep
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }
