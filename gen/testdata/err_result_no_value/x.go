package resultnovalue

import (
	"context"
	"time"
)

//dag:workflow result=Wait
type Order struct{ ID string }

//dag:workflow result=Pack
type Shipment struct{ OrderID string }

//dag:workflow result=Check
type Refund struct{ OrderID string }

//dag:workflow
type Audit struct{ OrderID string }

//dag:sleep
func Wait(ctx context.Context, o Order) (time.Duration, error) { return time.Second, nil }

//dag:step
func Pack(ctx context.Context, s Shipment) error { return nil }

//dag:child
func Check(ctx context.Context, r Refund) (Audit, error) { return Audit{}, nil }

//dag:step
func Record(ctx context.Context, a Audit) error { return nil }
