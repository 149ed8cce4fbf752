package priority

import "context"

// priority= is an integer from 0 to 9.

//dag:workflow priority=10
type Order struct{ ID string }

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

//dag:workflow priority=-1
type Refund struct{ ID string }

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

//dag:workflow priority=high
type Claim struct{ ID string }

//dag:step
func File(ctx context.Context, c Claim) error { return nil }
