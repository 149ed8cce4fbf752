package unknown_key

import (
	"context"
	"github.com/dagenhq/dagen/runtime/dag"
	"time"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step afterr=Validate retries=3 colour=red
func Charge(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }

//dag:sleep after=Charge skip=never
func Wait(ctx context.Context, o Order, r Receipt) (time.Duration, error) { return 0, nil }

//dag:onfailure retry=1
func Alert(ctx context.Context, o Order, f dag.Failure) error { return nil }

//dag:workflow concurency=1 timout=1h perr=ID limit=2
type Refund struct{ ID string }

//dag:step
func Pay(ctx context.Context, r Refund) error { return nil }
