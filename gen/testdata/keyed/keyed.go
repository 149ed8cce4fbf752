// Package keyed exercises idempotency keys (key= on //dag:workflow): a
// nested path to a named string type, an integer renamed by its json tag,
// an unsigned integer promoted from an embedded struct, and a string
// promoted from an embedded struct that JSON encodes as an object.
package keyed

import (
	"context"
	"fmt"
)

// Order is keyed by its customer's id: one run per customer while it is
// retained.
//
//dag:workflow key=Customer.ID
type Order struct {
	Customer Customer
	Amount   int64
}

// Customer places orders.
type Customer struct {
	ID   CustomerID
	Name string
}

// CustomerID is a named string type: the key converts it.
type CustomerID string

// Receipt is the output of Charge.
type Receipt struct {
	Customer CustomerID
	Amount   int64
}

// Charge charges the order.
//
//dag:step
func Charge(ctx context.Context, o Order) (Receipt, error) {
	return Receipt{Customer: o.Customer.ID, Amount: o.Amount}, nil
}

// Invoice is keyed by its number, a signed integer stored under "number".
//
//dag:workflow key=Number
type Invoice struct {
	Number int32 `json:"number"`
	Total  int64
}

// Send sends the invoice.
//
//dag:step
func Send(ctx context.Context, i Invoice) (string, error) {
	return fmt.Sprintf("invoice %d: %d", i.Number, i.Total), nil
}

// Batch is keyed by Seq, promoted from the embedded Meta.
//
//dag:workflow key=Seq
type Batch struct {
	Meta
	Items []string
}

// Meta is embedded in Batch.
type Meta struct {
	Seq uint64
}

// Count counts the batch's items.
//
//dag:step
func Count(ctx context.Context, b Batch) (int, error) { return len(b.Items), nil }

// Upload is keyed by Bucket, promoted from Source, which its json tag
// encodes as an object of its own ({"source":{"Bucket":…}}).
//
//dag:workflow key=Bucket
type Upload struct {
	Source `json:"source"`
	Size   int
}

// Source is embedded in Upload under a JSON name.
type Source struct {
	Bucket string
}

// Put stores the upload.
//
//dag:step
func Put(ctx context.Context, u Upload) error { return nil }
