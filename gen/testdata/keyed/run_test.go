package keyed

import (
	"context"
	"testing"

	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
)

// These tests check the keys the generated definitions derive from an
// encoded input, and that the typed Start and Run find a retained run by
// its key on dagtest.

func TestKeys(t *testing.T) {
	for _, c := range []struct {
		def  *engine.Definition
		in   string
		want string
	}{
		{OrderDefinition(), `{"Customer":{"ID":"c-1","Name":"Ada"},"Amount":5}`, "c-1"},
		{OrderDefinition(), `{"Customer":{"Name":"Ada"}}`, ""},
		{InvoiceDefinition(), `{"number":-7,"Total":3}`, "-7"},
		{InvoiceDefinition(), `{"number":0}`, ""},
		{BatchDefinition(), `{"Seq":18446744073709551615}`, "18446744073709551615"},
		{BatchDefinition(), `{"Items":["a"]}`, ""},
		{UploadDefinition(), `{"source":{"Bucket":"b-1"},"Size":3}`, "b-1"},
	} {
		got, err := c.def.Key([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("%s key of %s = %q, %v; want %q", c.def.Name, c.in, got, err, c.want)
		}
	}
	if _, err := OrderDefinition().Key([]byte(`{"Customer":7}`)); err == nil {
		t.Error("an input that does not decode gave a key")
	}
}

func TestDuplicateByPath(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := NewOrderWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	ada := Customer{ID: "c-1", Name: "Ada"}
	first, err := wf.Start(ctx, "shop", Order{Customer: ada, Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate() {
		t.Error("the first run is a duplicate")
	}
	again, err := wf.Start(ctx, "shop", Order{Customer: ada, Amount: 99})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID() != first.ID() || !again.Duplicate() {
		t.Errorf("second start of c-1: run %s duplicate %v, want run %s duplicate", again.ID(), again.Duplicate(), first.ID())
	}
	other, err := wf.Start(ctx, "shop", Order{Customer: Customer{ID: "c-2"}, Amount: 7})
	if err != nil {
		t.Fatal(err)
	}
	if other.ID() == first.ID() || other.Duplicate() {
		t.Errorf("start of c-2: run %s duplicate %v, want a new run", other.ID(), other.Duplicate())
	}
	elsewhere, err := wf.Start(ctx, "other-shop", Order{Customer: ada, Amount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if elsewhere.ID() == first.ID() || elsewhere.Duplicate() {
		t.Error("keys are per tenant, but another tenant's c-1 found the first run")
	}

	// WithKey replaces the key derived from the input.
	manual, err := wf.Start(ctx, "shop", Order{Customer: ada, Amount: 8}, engine.WithKey("x"))
	if err != nil {
		t.Fatal(err)
	}
	if manual.ID() == first.ID() || manual.Duplicate() {
		t.Errorf("start of c-1 with key x: run %s duplicate %v, want a new run", manual.ID(), manual.Duplicate())
	}
	byKey, err := wf.Start(ctx, "shop", Order{Customer: Customer{ID: "c-3"}}, engine.WithKey("x"))
	if err != nil {
		t.Fatal(err)
	}
	if byKey.ID() != manual.ID() || !byKey.Duplicate() {
		t.Errorf("start of c-3 with key x: run %s duplicate %v, want run %s duplicate", byKey.ID(), byKey.Duplicate(), manual.ID())
	}
	if wf.Get(first.ID()).Duplicate() {
		t.Error("a handle from Get reports a duplicate")
	}

	h.RunUntilIdle(ctx)
	// Run passes its options through, and waits for the run it found:
	// its result is the first input's.
	res, err := wf.Run(ctx, "shop", Order{Customer: ada, Amount: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Charge != (Receipt{Customer: "c-1", Amount: 5}) {
		t.Errorf("Run of c-1 = %+v, want the first run's receipt", res.Charge)
	}
	res, err = wf.Run(ctx, "shop", Order{Customer: ada, Amount: 1000}, engine.WithKey("x"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Charge != (Receipt{Customer: "c-1", Amount: 8}) {
		t.Errorf("Run with key x = %+v, want the receipt of the run started with key x", res.Charge)
	}
}

func TestDuplicateByInteger(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := NewInvoiceWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	start := func(number int32, opts ...engine.TriggerOption) *InvoiceRun {
		t.Helper()
		r, err := wf.Start(ctx, "acme", Invoice{Number: number, Total: 10}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first, again, next := start(7), start(7), start(8)
	if first.Duplicate() || !again.Duplicate() || again.ID() != first.ID() {
		t.Errorf("invoice 7 twice: runs %s, %s, duplicate %v, %v; want one run, found the second time", first.ID(), again.ID(), first.Duplicate(), again.Duplicate())
	}
	if next.Duplicate() || next.ID() == first.ID() {
		t.Error("invoice 8 found invoice 7's run")
	}
	if over := start(7, engine.WithKey("7-resent")); over.Duplicate() || over.ID() == first.ID() {
		t.Error("WithKey did not replace the key of invoice 7")
	}
	// Zero is no key: every unnumbered invoice starts a run.
	if a, b := start(0), start(0); a.Duplicate() || b.Duplicate() || a.ID() == b.ID() {
		t.Error("two invoices without a number are one run")
	}
	h.RunUntilIdle(ctx)
	res, err := first.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Send != "invoice 7: 10" {
		t.Errorf("Send = %q", res.Send)
	}
}

func TestDuplicateByPromotedField(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := NewBatchWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	first, err := wf.Start(ctx, "acme", Batch{Meta: Meta{Seq: 1}, Items: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	again, err := wf.Start(ctx, "acme", Batch{Meta: Meta{Seq: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate() || again.ID() != first.ID() {
		t.Errorf("batch 1 twice: run %s duplicate %v, want run %s duplicate", again.ID(), again.Duplicate(), first.ID())
	}
	h.RunUntilIdle(ctx)
	if res, err := again.Wait(ctx); err != nil || res.Count != 2 {
		t.Errorf("Count of batch 1 = %d, %v; want 2", res.Count, err)
	}
}
