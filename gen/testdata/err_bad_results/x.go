package bad_results

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) Validation { return Validation{} }

//dag:step
func Charge(ctx context.Context, o Order) (Receipt, bool) { return Receipt{}, true }

//dag:step
func Ship(ctx context.Context, o Order) {}

//dag:step
func Notify(ctx context.Context, o Order) (int, string, error) { return 0, "", nil }

//dag:step
func Twice(ctx context.Context, o Order) (error, error) { return nil, nil }
