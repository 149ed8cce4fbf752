package workflow_alias

import (
	"context"
	"time"
)

type Order struct{ Amount int }

//dag:workflow
type Purchase = Order

//dag:workflow
type Refund = struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) error { return nil }

//dag:step
func Settle(ctx context.Context, r Refund) error { return nil }

//dag:workflow
type Stamp = time.Time
