package maybe_no_value

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

//dag:workflow
type Order struct{ Amount int }

type Receipt struct{ ID string }

//dag:sleep
func Wait(ctx context.Context, o Order) (time.Duration, error) { return time.Hour, nil }

//dag:step
func Audit(ctx context.Context, o Order) error { return nil }

//dag:step
func Charge(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }

//dag:step after=Wait
func Remind(ctx context.Context, o Order, waited dag.Maybe[time.Duration]) error { return nil }

//dag:step after=Charge,Audit
func Ship(ctx context.Context, o Order, r Receipt, audited dag.Maybe[struct{}]) error { return nil }

//dag:step after=Audit
func Report(ctx context.Context, o Order, audited bool) error { return nil }

//dag:step after=Wait,Audit
func Close(ctx context.Context, o Order, done dag.Maybe[bool]) error { return nil }
