package cycle

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Root(ctx context.Context, o Order) error { return nil }

//dag:step after=Root,Gamma
func Alpha(ctx context.Context, o Order) error { return nil }

//dag:step after=Alpha
func Beta(ctx context.Context, o Order) error { return nil }

//dag:step after=Beta
func Gamma(ctx context.Context, o Order) error { return nil }

//dag:step after=Delta
func Epsilon(ctx context.Context, o Order) error { return nil }

//dag:step after=Epsilon
func Delta(ctx context.Context, o Order) error { return nil }
