package flow

import (
	"context"
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
)

// These tests check what the generated definitions say about caps and
// deadlines, the concurrency keys they derive from an encoded input, and
// that the typed handles run the workflows on dagtest.

func TestDefinitions(t *testing.T) {
	for _, c := range []struct {
		def         *engine.Definition
		concurrency int
		per, key    bool
		timeout     time.Duration
	}{
		{ReportDefinition(), 2, false, false, 90 * time.Minute},
		{OrderDefinition(), 1, true, false, 0},
		{TransferDefinition(), 3, true, true, 0},
	} {
		d := c.def
		if d.Concurrency != c.concurrency || (d.ConcurrencyKey != nil) != c.per || (d.Key != nil) != c.key || d.Timeout != c.timeout {
			t.Errorf("%s: Concurrency %d, ConcurrencyKey set %v, Key set %v, Timeout %v; want %d, %v, %v, %v",
				d.Name, d.Concurrency, d.ConcurrencyKey != nil, d.Key != nil, d.Timeout, c.concurrency, c.per, c.key, c.timeout)
		}
	}
}

func TestConcurrencyKeys(t *testing.T) {
	for _, c := range []struct {
		def  *engine.Definition
		in   string
		want string
	}{
		{OrderDefinition(), `{"Customer":{"ID":"c-1","Name":"Ada"},"Amount":5}`, "c-1"},
		{OrderDefinition(), `{"Customer":{"Name":"Ada"}}`, ""},
		{TransferDefinition(), `{"Ref":"t-1","account":42,"Cents":100}`, "42"},
		{TransferDefinition(), `{"account":-7}`, "-7"},
		{TransferDefinition(), `{"Ref":"t-2"}`, ""},
	} {
		got, err := c.def.ConcurrencyKey([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("%s concurrency key of %s = %q, %v; want %q", c.def.Name, c.in, got, err, c.want)
		}
	}
	// key= and per= of Transfer read different fields of one input.
	if got, err := TransferDefinition().Key([]byte(`{"Ref":"t-1","account":42}`)); err != nil || got != "t-1" {
		t.Errorf("Transfer key = %q, %v; want t-1", got, err)
	}
	if _, err := OrderDefinition().ConcurrencyKey([]byte(`{"Customer":7}`)); err == nil {
		t.Error("an input that does not decode gave a concurrency key")
	}
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	reports, err := NewReportWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	orders, err := NewOrderWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	transfers, err := NewTransferWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	months := []string{"2026-01", "2026-02", "2026-03"}
	var reportRuns []*ReportRun
	for _, month := range months {
		r, err := reports.Start(ctx, "acme", Report{Month: month})
		if err != nil {
			t.Fatal(err)
		}
		reportRuns = append(reportRuns, r)
	}
	// A trigger's own deadline is accepted in place of the definition's.
	if _, err := reports.Start(ctx, "acme", Report{Month: "2026-04"}, engine.WithTimeout(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ada := Customer{ID: "c-1", Name: "Ada"}
	var orderRuns []*OrderRun
	for _, o := range []Order{{Customer: ada, Amount: 5}, {Customer: ada, Amount: 7}, {Customer: Customer{ID: "c-2"}, Amount: 9}} {
		r, err := orders.Start(ctx, "acme", o)
		if err != nil {
			t.Fatal(err)
		}
		orderRuns = append(orderRuns, r)
	}
	first, err := transfers.Start(ctx, "acme", Transfer{Ref: "t-1", Account: 42, Cents: 100})
	if err != nil {
		t.Fatal(err)
	}
	again, err := transfers.Start(ctx, "acme", Transfer{Ref: "t-1", Account: 42, Cents: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate() || again.ID() != first.ID() {
		t.Errorf("transfer t-1 twice: run %s duplicate %v, want run %s duplicate", again.ID(), again.Duplicate(), first.ID())
	}
	h.RunUntilIdle(ctx)

	for i, r := range reportRuns {
		res, err := r.Wait(ctx)
		if want := "report " + months[i]; err != nil || res.Render != want {
			t.Errorf("report %d = %q, %v; want %q", i, res.Render, err, want)
		}
	}
	for i, r := range orderRuns {
		res, err := r.Wait(ctx)
		if want := []int64{5, 7, 9}[i]; err != nil || res.Charge != want {
			t.Errorf("order %d = %d, %v; want %d", i, res.Charge, err, want)
		}
	}
	if res, err := first.Wait(ctx); err != nil || res.Book != "t-1: 100 to 42" {
		t.Errorf("transfer t-1 = %q, %v", res.Book, err)
	}
}
