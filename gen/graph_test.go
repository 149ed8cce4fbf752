package gen_test

import (
	"path/filepath"
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

// TestGraphRateLimit labels a rate-limited step with its limit, units=
// and per=.
func TestGraphRateLimit(t *testing.T) {
	limit := &analysis.RateLimit{Name: "stripe", Const: "Stripe", Rate: 100}
	s := &analysis.Step{Func: "Charge", Name: "Charge",
		RateLimit: &analysis.StepRateLimit{Limit: limit, Units: 2, Key: &analysis.Key{Path: "Customer.ID"}}}
	w := &analysis.Workflow{Name: "Order", TypeName: "Order", Steps: []*analysis.Step{s}}
	if m, want := gen.Mermaid(w), `Charge["Charge<br/>ratelimit=stripe units=2 per=Customer.ID"]`; !strings.Contains(m, want) {
		t.Errorf("mermaid lacks %q:\n%s", want, m)
	}
}

// TestGraphGolden draws the workflows of a few cases as Mermaid and DOT and
// compares them with want/graph.mmd and want/graph.dot (-update rewrites
// them). The mapped case shows each=: a subroutine node (Mermaid) or a
// box3d (DOT) labelled with the parent it maps and its limit, and a thick
// or bold edge from that parent. The signal case shows signal waits: a
// parallelogram labelled with the wait's name and timeout (and its type
// when that has another name); its schedules are not drawn.
func TestGraphGolden(t *testing.T) {
	for _, name := range []string{"mapped", "signal"} {
		t.Run(name, func(t *testing.T) {
			pkgs, diags := analysis.Run(t.Context(), analysis.Config{}, "./testdata/"+name)
			if analysis.HasErrors(diags) || len(pkgs) != 1 || len(pkgs[0].Workflows) != 1 {
				t.Fatalf("packages %v, diagnostics %v", pkgs, diags)
			}
			w := pkgs[0].Workflows[0]
			dir := filepath.Join("testdata", name, "want")
			checkGolden(t, filepath.Join(dir, "graph.mmd"), []byte(gen.Mermaid(w)))
			checkGolden(t, filepath.Join(dir, "graph.dot"), []byte(gen.DOT(w)))
		})
	}
}
