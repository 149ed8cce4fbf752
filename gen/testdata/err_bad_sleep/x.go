package bad_sleep

import (
	"context"
	"time"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

//dag:sleep
func Hold(ctx context.Context, o Order) time.Duration { return 0 }

//dag:sleep
func Until(ctx context.Context, o Order) (int, error) { return 0, nil }

//dag:sleep
func Never(ctx context.Context, o Order) error { return nil }
