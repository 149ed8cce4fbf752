package malformed_directive

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step after Validate retry=three name="unterminated
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after=Validate backoff=fast timeout=-1s =x name="a"b
func Charge(ctx context.Context, o Order, v Validation) (Receipt, error) { return Receipt{}, nil }
