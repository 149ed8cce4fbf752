package child

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// These tests check the definitions the generated code builds: child
// steps of kind KindChild naming the workflow they run, their output type
// the child's result, and Run returning the encoded child input.

func TestDefinitions(t *testing.T) {
	defs := map[string]*engine.Definition{
		OrderFingerprint:    OrderDefinition(),
		ShipmentFingerprint: ShipmentDefinition(),
		AuditFingerprint:    AuditDefinition(),
		BatchFingerprint:    BatchDefinition(),
	}
	for fp, def := range defs {
		if err := def.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := def.Fingerprint(); got != fp {
			t.Errorf("%s: Fingerprint() = %s, want %s", def.Name, got, fp)
		}
	}
	if got := ShipmentDefinition().Name; got != "Shipping" {
		t.Errorf("Shipping workflow named %q", got)
	}
}

func TestChildSteps(t *testing.T) {
	steps := map[string]engine.Step{}
	for _, s := range OrderDefinition().Steps {
		steps[s.Name] = s
	}
	const pkg = "github.com/dagenhq/dagen/gen/testdata/child."
	for _, c := range []struct {
		step, output, each string
		child              engine.Child
	}{
		{"ship", pkg + "Delivery", "", engine.Child{Workflow: "Shipping", InputType: pkg + "Shipment", Result: "Deliver"}},
		{"ShipItem", pkg + "Delivery", "ListItems", engine.Child{Workflow: "Shipping", InputType: pkg + "Shipment", Result: "Deliver"}},
		{"AuditOrder", "", "", engine.Child{Workflow: "Audit", InputType: pkg + "Audit"}},
		{"RunBatch", "[]" + pkg + "Delivery", "", engine.Child{Workflow: "Batch", InputType: pkg + "Batch", Result: "ShipAll"}},
	} {
		s := steps[c.step]
		if s.Kind != engine.KindChild || s.Child == nil || *s.Child != c.child || s.OutputType != c.output || s.Each != c.each {
			t.Errorf("step %s: kind %v, child %+v, output %q, each %q; want a child step %+v, output %q, each %q",
				c.step, s.Kind, s.Child, s.OutputType, s.Each, c.child, c.output, c.each)
		}
	}

	in, _ := json.Marshal(Order{ID: "o-1"})
	valid, _ := json.Marshal(Validation{OK: true})
	out, err := steps["ship"].Run(context.Background(), engine.StepInput{Input: in, Parents: parent("Validate", valid)})
	if err != nil {
		t.Fatal(err)
	}
	var got Shipment
	if err := json.Unmarshal(out, &got); err != nil || got != (Shipment{OrderID: "o-1"}) {
		t.Errorf("ship's Run = %s, %v; want the encoded Shipment of order o-1", out, err)
	}
}

func parent(name string, out []byte) []store.ParentResult {
	return []store.ParentResult{{Step: name, Status: store.TaskCompleted, Output: out}}
}

// TestRunsChildren drives the order workflow on dagtest with the workflows
// it runs registered: each child step's run starts, and its typed result
// reaches the parent's steps and result.
func TestRunsChildren(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	for _, def := range []*engine.Definition{ShipmentDefinition(), AuditDefinition(), BatchDefinition()} {
		if err := h.Engine.Register(def); err != nil {
			t.Fatal(err)
		}
	}
	wf, err := NewOrderWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	res, err := wf.Run(ctx, "tenant", Order{ID: "o-1", Items: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := res.ShipOrder.Get(); !ok || !d.Tracked {
		t.Errorf("ShipOrder = %+v, want a tracked delivery", res.ShipOrder)
	}
	if len(res.ShipItem) != 3 || res.ShipItem[0].Item != "a" || res.ShipItem[2].Item != "c" {
		t.Errorf("ShipItem = %+v, want the deliveries of a, b, c in order", res.ShipItem)
	}
	if res.Summarize != (Summary{Whole: true, Delivered: 3}) {
		t.Errorf("Summarize = %+v", res.Summarize)
	}
	if len(res.RunBatch) != 3 || res.Count != 3 {
		t.Errorf("RunBatch = %+v, Count = %d: want Batch's three deliveries", res.RunBatch, res.Count)
	}

	// An invalid order skips ShipOrder by its predicate: no Shipping run
	// starts for it.
	res, err = wf.Run(ctx, "tenant", Order{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ShipOrder.Ok() {
		t.Errorf("ShipOrder ran for an invalid order: %+v", res.ShipOrder)
	}
}
