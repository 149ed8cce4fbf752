package childparamtype

import "context"

//dag:workflow
type Order struct{ ID string }

//dag:workflow result=Deliver
type Shipment struct{ OrderID string }

//dag:workflow
type Audit struct{ OrderID string }

type Delivery struct{ Tracked bool }

//dag:child
func Ship(ctx context.Context, o Order) (Shipment, error) { return Shipment{}, nil }

//dag:child
func Check(ctx context.Context, o Order) (Audit, error) { return Audit{}, nil }

// Confirm takes a string for Ship, whose result is a Delivery.
//
//dag:step after=Ship
func Confirm(ctx context.Context, o Order, d string) error { return nil }

// Close takes a parameter for Check, whose workflow has no result=.
//
//dag:step after=Check
func Close(ctx context.Context, o Order, d Delivery) error { return nil }

//dag:step
func Deliver(ctx context.Context, s Shipment) (Delivery, error) { return Delivery{}, nil }

//dag:step
func Record(ctx context.Context, a Audit) error { return nil }

//dag:step
func ListItems(ctx context.Context, o Order) ([]Shipment, error) { return nil, nil }

//dag:child after=ListItems each=ListItems
func ShipEach(ctx context.Context, o Order, s Shipment) (Shipment, error) { return s, nil }

// Tally takes one Delivery for ShipEach, which gives []Delivery.
//
//dag:step after=ShipEach
func Tally(ctx context.Context, o Order, d Delivery) error { return nil }
