package duplicate_onfailure

import (
	"context"
	"github.com/dagenhq/dagen/runtime/dag"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:onfailure
func Alert(ctx context.Context, o Order, f dag.Failure) error { return nil }

//dag:onfailure
func Page(ctx context.Context, o Order, f dag.Failure) error { return nil }
