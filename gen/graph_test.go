package gen_test

import (
	"strings"
	"testing"

	"github.com/dagenhq/dagen/gen"
	"github.com/dagenhq/dagen/internal/analysis"
)

// TestGraphQuoting draws a workflow whose stored names hold a colon and
// quotes, which must not break Mermaid's front matter or labels, nor DOT.
func TestGraphQuoting(t *testing.T) {
	a := &analysis.Step{Func: "Say", Name: `say "hi"`}
	b := &analysis.Step{Func: "End", Name: "End"}
	b.Parents = []*analysis.Edge{{Parent: a, Param: -1}}
	w := &analysis.Workflow{Name: `greet: "v2"`, TypeName: "Greet", Steps: []*analysis.Step{a, b}}

	m := gen.Mermaid(w)
	for _, want := range []string{"title: \"greet: \\\"v2\\\"\"\n", `Say["Say (say #quot;hi#quot;)"]`, "End_[\"End\"]", "Say --> End_"} {
		if !strings.Contains(m, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m)
		}
	}
	d := gen.DOT(w)
	for _, want := range []string{`digraph "greet: \"v2\"" {`, `"Say" [label="Say (say \"hi\")"];`, `"Say" -> "End";`} {
		if !strings.Contains(d, want) {
			t.Errorf("dot lacks %q:\n%s", want, d)
		}
	}
}
