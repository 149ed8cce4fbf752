package unencodable

import (
	"context"
	"io"
	"time"
	"unsafe"
)

//dag:workflow
type Order struct{ Amount int }

type Validation struct{ OK bool }

type Receipt struct{ ID string }

type Stream struct {
	Name    string
	Updates chan int
}

type Nested struct {
	Inner   []map[string]Stream
	hidden  func()
	Skipped func() `json:"-"`
}

//dag:workflow
type Bad struct {
	Ptr unsafe.Pointer
}

//dag:step
func Bad1(ctx context.Context, b Bad) error { return nil }

//dag:step
func Open(ctx context.Context, o Order) (Stream, error) { return Stream{}, nil }

//dag:step
func Deep(ctx context.Context, o Order) (Nested, error) { return Nested{}, nil }

//dag:step
func Callback(ctx context.Context, o Order) (func() error, error) { return nil, nil }

//dag:step
func Phase(ctx context.Context, o Order) (complex128, error) { return 0, nil }

//dag:step
func Keys(ctx context.Context, o Order) (map[Validation]int, error) { return nil, nil }

//dag:step
func Fine(ctx context.Context, o Order) (map[int]time.Time, error) { return nil, nil }

// Outcome holds an error, which JSON writes as {} and cannot read back.
type Outcome struct {
	Err error
}

//dag:step
func Read(ctx context.Context, o Order) (io.Reader, error) { return nil, nil }

//dag:step
func Try(ctx context.Context, o Order) (Outcome, error) { return Outcome{}, nil }

//dag:step
func Loose(ctx context.Context, o Order) (map[string]any, error) { return nil, nil }
