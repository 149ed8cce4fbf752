package lost_field_tagged

import (
	"context"
	"unsafe"
)

// Every json:"-" field of Order holds what JSON cannot: the tags say the
// fields are not carried, so there is nothing to warn about.
//
//dag:workflow
type Order struct {
	ID     string
	Cancel func()                  `json:"-"`
	Done   chan struct{}           `json:"-"`
	Phase  complex128              `json:"-"`
	Raw    unsafe.Pointer          `json:"-"`
	Err    error                   `json:"-"`
	Hooks  []func(context.Context) `json:"-"`
	ByKey  map[[2]int]string       `json:"-"`
}

// Receipt mixes both: Notify is silent, Token (a string JSON could carry)
// still warns with its fix.
type Receipt struct {
	ID     string
	Token  string        `json:"-"`
	Notify chan<- string `json:"-"`
}

//dag:step
func Charge(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }
