// Package childpkg runs child workflows of another package, ship, which
// is not among the packages generated: dagen reads ship's directives.
package childpkg

import (
	"context"

	"github.com/dagenhq/dagen/gen/testdata/childpkg/ship"
)

// Order is the workflow input.
//
//dag:workflow
type Order struct {
	ID    string
	Items []string
}

// Ship runs a Shipping run, whose result is []ship.Delivery.
//
//dag:child
func Ship(ctx context.Context, o Order) (ship.Shipment, error) {
	return ship.Shipment{OrderID: o.ID, Items: o.Items}, nil
}

// Tell runs a ship.Note run, which has no result.
//
//dag:child after=Ship
func Tell(ctx context.Context, o Order, ds []ship.Delivery) (ship.Note, error) {
	return ship.Note{Text: o.ID}, nil
}
