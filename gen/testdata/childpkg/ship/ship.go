// Package ship holds workflows that package childpkg runs as children.
// It is not generated with childpkg: dagen reads its directives for the
// stored names and the result= steps.
package ship

import "context"

// Shipment is the input of workflow "Shipping", whose result is the
// slice of Deliver's outputs: Deliver is mapped.
//
//dag:workflow name=Shipping result=Deliver
type Shipment struct {
	OrderID string
	Items   []string
}

// Note is the input of a workflow without result=.
//
//dag:workflow
type Note struct{ Text string }

// Delivery is one delivered item.
type Delivery struct{ Item string }

//dag:step
func Split(ctx context.Context, s Shipment) ([]string, error) { return s.Items, nil }

//dag:step after=Split each=Split name=deliver
func Deliver(ctx context.Context, s Shipment, item string) (Delivery, error) {
	return Delivery{Item: item}, nil
}

//dag:step
func Write(ctx context.Context, n Note) error { return nil }
