package lost_field

import (
	"context"
	"strconv"
	"time"
)

//dag:workflow
type Order struct {
	ID     string
	secret string
}

type Receipt struct {
	ID     string
	note   string
	Secret string `json:"-"`
	done   chan struct{}
	At     time.Time // MarshalJSON: trusted
}

type Item struct {
	SKU    string
	hidden int
}

type meta struct {
	Version int // promoted: kept
	etag    string
}

// Node is recursive: checked once, without looping.
type Node struct {
	Name     string
	Children []*Node
	parent   *Node
}

type Batch struct {
	meta
	Items []*Item
	Index map[string]Item
	Tree  Node
	Stamp Stamp
}

// Stamp says itself how it is encoded, so its unexported field is fine.
type Stamp struct{ unix int64 }

func (s Stamp) MarshalJSON() ([]byte, error) { return []byte(strconv.FormatInt(s.unix, 10)), nil }

func (s *Stamp) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseInt(string(b), 10, 64)
	s.unix = n
	return err
}

//dag:step
func Charge(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }

//dag:step
func Refund(ctx context.Context, o Order) (Receipt, error) { return Receipt{}, nil }

//dag:step
func Pack(ctx context.Context, o Order) (Batch, error) { return Batch{}, nil }

//dag:step
func Label(ctx context.Context, o Order) (struct {
	Text  string
	width int
}, error) {
	return struct {
		Text  string
		width int
	}{}, nil
}
