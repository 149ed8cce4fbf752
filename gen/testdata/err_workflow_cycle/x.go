package workflowcycle

import "context"

//dag:workflow
type Checkout struct{ ID string }

//dag:workflow
type Shipping struct{ ID string }

//dag:workflow
type Retry struct{ ID string }

//dag:step
func Start(ctx context.Context, c Checkout) error { return nil }

//dag:child after=Start
func Ship(ctx context.Context, c Checkout) (Shipping, error) { return Shipping{}, nil }

//dag:child
func Reorder(ctx context.Context, s Shipping) (Checkout, error) { return Checkout{}, nil }

//dag:child
func Again(ctx context.Context, r Retry) (Retry, error) { return r, nil }
