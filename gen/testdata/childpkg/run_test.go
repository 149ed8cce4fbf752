package childpkg

import (
	"testing"

	"github.com/dagenhq/dagen/runtime/engine"
)

func TestDefinition(t *testing.T) {
	def := OrderDefinition()
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := def.Fingerprint(); got != OrderFingerprint {
		t.Errorf("Fingerprint() = %s, want %s", got, OrderFingerprint)
	}
	const pkg = "github.com/dagenhq/dagen/gen/testdata/childpkg/ship."
	want := map[string]struct {
		output string
		child  engine.Child
	}{
		"Ship": {"[]" + pkg + "Delivery", engine.Child{Workflow: "Shipping", InputType: pkg + "Shipment", Result: "deliver"}},
		"Tell": {"", engine.Child{Workflow: "Note", InputType: pkg + "Note"}},
	}
	for _, s := range def.Steps {
		w := want[s.Name]
		if s.Kind != engine.KindChild || s.Child == nil || *s.Child != w.child || s.OutputType != w.output {
			t.Errorf("step %s: kind %v, child %+v, output %q; want a child step %+v, output %q", s.Name, s.Kind, s.Child, s.OutputType, w.child, w.output)
		}
	}
}
