package childresults

import "context"

//dag:workflow
type Order struct{ ID string }

//dag:workflow
type Shipment struct{ OrderID string }

//dag:child
func Ship(ctx context.Context, o Order) error { return nil }

//dag:child
func Ship2(ctx context.Context, o Order) (Shipment, int, error) { return Shipment{}, 0, nil }

//dag:child
func Ship3(ctx context.Context, o Order) Shipment { return Shipment{} }

//dag:step
func Pack(ctx context.Context, s Shipment) error { return nil }
