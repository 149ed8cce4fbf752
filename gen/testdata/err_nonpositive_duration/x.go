package nonpositive_duration

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

//dag:step timeout=0
func Validate(ctx context.Context, o Order) error { return nil }

//dag:step retry=3 backoff=0s maxbackoff=-1m
func Charge(ctx context.Context, o Order) error { return nil }

//dag:step timeout=-30s retry=1 backoff=1ms
func Ship(ctx context.Context, o Order) error { return nil }

//dag:step timeout=soon
func Notify(ctx context.Context, o Order) error { return nil }
