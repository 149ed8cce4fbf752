package timeout_malformed

import "context"

//dag:workflow timeout=0
type Order struct{ ID string }

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

//dag:workflow concurrency=1 timeout=-48h
type Refund struct{ ID string }

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

//dag:workflow timeout=soon
type Claim struct{ ID string }

//dag:step
func File(ctx context.Context, c Claim) error { return nil }

// A number without a unit is no duration.
//
//dag:workflow timeout=48
type Visit struct{ ID string }

//dag:step
func Greet(ctx context.Context, v Visit) error { return nil }
