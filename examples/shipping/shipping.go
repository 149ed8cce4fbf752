package shipping

//go:generate go run github.com/dagenhq/dagen/cmd/dagen

import (
	"context"
	"fmt"
)

// Shipment is the input of the Shipment workflow: what to ship.
// Its type name names the workflow; result=BuyLabel makes BuyLabel's output the
// workflow's result, the value a step that runs Shipment as a child
// (//dag:child) completes with.
//
//dag:workflow result=BuyLabel
type Shipment struct {
	OrderID string
	Items   int
}

// Parcel is the output of Pack.
type Parcel struct {
	OrderID string
	Grams   int
}

// Label is the output of BuyLabel, and so the result of a Shipment run.
type Label struct {
	Tracking string
	Carrier  string
}

// Pack packs the order's items.
//
//dag:step
func Pack(ctx context.Context, r Shipment) (Parcel, error) {
	if r.Items <= 0 {
		return Parcel{}, fmt.Errorf("order %s has nothing to ship", r.OrderID)
	}
	return Parcel{OrderID: r.OrderID, Grams: 250 * r.Items}, nil
}

// BuyLabel buys a label for the parcel. The engine retries it twice, half a
// second apart and doubling, when the carrier does not answer.
//
//dag:step after=Pack retry=2 backoff=500ms
func BuyLabel(ctx context.Context, r Shipment, p Parcel) (Label, error) {
	carrier := "post"
	if p.Grams > 1000 {
		carrier = "freight"
	}
	return Label{Tracking: "trk-" + p.OrderID, Carrier: carrier}, nil
}
