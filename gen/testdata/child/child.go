// Package child exercises child steps (//dag:child): a workflow running
// another one of the package whose result= step's output its children
// take, skippable by a predicate; a mapped child step running one child
// per element, whose children take the slice of the children's results;
// a child step running a workflow without result=, which gives no value;
// and a child step running a workflow whose result is a mapped child
// step's.
package child

import (
	"context"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Order is the input of the parent workflow.
//
//dag:workflow
type Order struct {
	ID    string
	Items []string
}

// Shipment is the input of the child workflow Shipping; Deliver's output
// is its result.
//
//dag:workflow name=Shipping result=Deliver
type Shipment struct {
	OrderID string
	Item    string
}

// Audit is the input of a child workflow without a result.
//
//dag:workflow
type Audit struct{ OrderID string }

// Validation says whether an order can ship.
type Validation struct{ OK bool }

// Parcel is a packed shipment.
type Parcel struct{ Label string }

// Delivery is the result of a Shipping run.
type Delivery struct {
	Item    string
	Tracked bool
}

// Summary is what the order workflow ends with.
type Summary struct {
	Whole     bool
	Delivered int
}

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) {
	return Validation{OK: o.ID != ""}, nil
}

// ShipOrder runs one Shipping run for the whole order, unless it is
// invalid; its children get the Delivery of that run.
//
//dag:child after=Validate skip=invalid retry=2 backoff=1s timeout=1h name=ship
func ShipOrder(ctx context.Context, o Order, v Validation) (Shipment, error) {
	return Shipment{OrderID: o.ID}, nil
}

//dag:step
func ListItems(ctx context.Context, o Order) ([]string, error) { return o.Items, nil }

// ShipItem runs one Shipping run per item, at most 4 at once; its
// children get the deliveries in item order.
//
//dag:child after=ListItems each=ListItems limit=4
func ShipItem(ctx context.Context, o Order, item string) (Shipment, error) {
	return Shipment{OrderID: o.ID, Item: item}, nil
}

// AuditOrder runs an Audit run, which has no result: it orders its
// children and gives them nothing.
//
//dag:child after=Validate
func AuditOrder(ctx context.Context, o Order, v Validation) (Audit, error) {
	return Audit{OrderID: o.ID}, nil
}

//dag:step after=ShipOrder,ShipItem,AuditOrder
func Summarize(ctx context.Context, o Order, whole dag.Maybe[Delivery], items []Delivery) (Summary, error) {
	return Summary{Whole: whole.Ok(), Delivered: len(items)}, nil
}

//dag:step after=ShipItem skip=noneShipped
func Notify(ctx context.Context, o Order, ds []Delivery) error { return nil }

func invalid(v Validation) bool { return !v.OK }

func noneShipped(ds []Delivery) bool { return len(ds) == 0 }

//dag:step
func Pack(ctx context.Context, s Shipment) (Parcel, error) { return Parcel{Label: s.Item}, nil }

//dag:step after=Pack
func Deliver(ctx context.Context, s Shipment, p Parcel) (Delivery, error) {
	return Delivery{Item: p.Label, Tracked: true}, nil
}

//dag:step
func Record(ctx context.Context, a Audit) error { return nil }

// Batch is a workflow whose result is a mapped child step's: the
// deliveries of one Shipping run per item.
//
//dag:workflow result=ShipAll
type Batch struct {
	OrderID string
	Items   []string
}

//dag:step
func Items(ctx context.Context, b Batch) ([]string, error) { return b.Items, nil }

//dag:child after=Items each=Items
func ShipAll(ctx context.Context, b Batch, item string) (Shipment, error) {
	return Shipment{OrderID: b.OrderID, Item: item}, nil
}

// RunBatch runs a Batch run: its children get the result of Batch, itself
// the result of the child runs of Batch's mapped child step.
//
//dag:child
func RunBatch(ctx context.Context, o Order) (Batch, error) {
	return Batch{OrderID: o.ID, Items: o.Items}, nil
}

//dag:step after=RunBatch
func Count(ctx context.Context, o Order, ds []Delivery) (int, error) { return len(ds), nil }
