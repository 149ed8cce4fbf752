package resultunknown

import (
	"context"

	"github.com/dagenhq/dagen/runtime/dag"
)

//dag:workflow result=Delivr
type Order struct{ ID string }

//dag:workflow result=Deliver
type Shipment struct{ OrderID string }

//dag:workflow result=Alert
type Refund struct{ OrderID string }

//dag:workflow result=helper
type Audit struct{ OrderID string }

//dag:step
func Deliver(ctx context.Context, o Order) (string, error) { return "", nil }

//dag:step
func Pack(ctx context.Context, s Shipment) (string, error) { return "", nil }

//dag:step
func Pay(ctx context.Context, r Refund) (string, error) { return "", nil }

//dag:onfailure
func Alert(ctx context.Context, r Refund, f dag.Failure) error { return nil }

//dag:step
func Record(ctx context.Context, a Audit) (string, error) { return helper(), nil }

func helper() string { return "" }
