package key_type

import (
	"context"
	"time"
)

//dag:workflow key=Amount
type Order struct {
	ID     string
	Amount float64
}

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }

//dag:workflow key=Meta.Urgent
type Refund struct {
	Meta Meta
}

type Meta struct {
	Urgent bool
}

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }

//dag:workflow key=At
type Visit struct {
	At time.Time
}

//dag:step
func Greet(ctx context.Context, v Visit) error { return nil }

//dag:workflow key=Digest
type Upload struct {
	Digest []byte
}

//dag:step
func Store(ctx context.Context, u Upload) error { return nil }
