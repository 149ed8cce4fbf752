package child

import (
	"context"
	"encoding/json"
	"testing"

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
