// Package parcel has a type without //dag:workflow, and a workflow whose
// result step is unexported.
package parcel

import "context"

// Parcel is no workflow input.
type Parcel struct{ ID string }

// Crate is a workflow input; its result step is unexported.
//
//dag:workflow result=deliver
type Crate struct{ ID string }

//dag:step
func deliver(ctx context.Context, c Crate) (string, error) { return c.ID, nil }
