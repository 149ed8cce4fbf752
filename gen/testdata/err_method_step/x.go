package method_step

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

type Service struct{}

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:step
func (s *Service) Charge(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }
