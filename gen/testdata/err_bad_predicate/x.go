package bad_predicate

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step after=Validate skip=verdict,both,generic,many
func Charge(ctx context.Context, o Order, v Validation) (Receipt, error) { return Receipt{}, nil }

func verdict(v Validation) string { return "" }

func both(v Validation) (bool, bool) { return false, false }

func generic[T any](v T) bool { return false }

func many(vs ...Validation) bool { return false }
