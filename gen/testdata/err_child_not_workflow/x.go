package childnotworkflow

import (
	"context"

	"github.com/dagenhq/dagen/gen/testdata/err_child_not_workflow/parcel"
)

//dag:workflow
type Order struct{ ID string }

//dag:workflow result=Deliver
type Shipment struct{ OrderID string }

// Label is not a workflow input.
type Label struct{ Text string }

//dag:child
func Print(ctx context.Context, o Order) (Label, error) { return Label{}, nil }

//dag:child
func Ship(ctx context.Context, o Order) (*Shipment, error) { return nil, nil }

//dag:child
func Send(ctx context.Context, o Order) (parcel.Parcel, error) { return parcel.Parcel{}, nil }

//dag:step
func Deliver(ctx context.Context, s Shipment) (string, error) { return "", nil }

//dag:child
func Box(ctx context.Context, o Order) (parcel.Crate, error) { return parcel.Crate{}, nil }
