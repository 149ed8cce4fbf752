package misplaced

import (
	"context"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) { return Validation{}, nil }

//dag:workflow
func NotAType() {}

//dag:step
type NotAFunc struct{}

//dag:step
var notAFunc = 1

//dag:step

func BlankLineBelow(ctx context.Context, o Order) error { return nil }

func body(ctx context.Context, o Order) error {
	//dag:step
	return nil
}

//dag:step
func Trailing(ctx context.Context, o Order) error { return nil } //dag:step

//dag:sleep
