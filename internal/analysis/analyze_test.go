package analysis_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/dagenhq/dagen/internal/analysis"
)

// TestOrderGraph checks the graph built for the order example of the
// design: edges, optional parents, skippability and predicate arguments.
func TestOrderGraph(t *testing.T) {
	pkgs, diags := analysis.Run(context.Background(), analysis.Config{}, "../../examples/order")
	for _, d := range diags {
		t.Errorf("diagnostic: %v", d)
	}
	if len(pkgs) != 1 || len(pkgs[0].Workflows) != 1 {
		t.Fatalf("packages %+v", pkgs)
	}
	w := pkgs[0].Workflows[0]
	if w.Name != "Order" || w.OnFailure != "Alert" || len(w.Steps) != 6 {
		t.Fatalf("workflow %s onfailure %q with %d steps", w.Name, w.OnFailure, len(w.Steps))
	}
	if w.Key == nil || w.Key.Path != "ID" || w.Key.Kind != analysis.KeyString || w.Key.Type.String() != "string" {
		t.Errorf("key %+v, want ID, a string", w.Key)
	}
	skippable := map[string]bool{"Validate": false, "Charge": true, "Reject": true, "FraudWindow": true, "Ship": true, "Finalize": true}
	for name, want := range skippable {
		if s := w.Step(name); s == nil || s.Skippable != want {
			t.Errorf("%s skippable = %v, want %v", name, s != nil && s.Skippable, want)
		}
	}
	charge := w.Step("Charge")
	if charge.MaxRetries != 3 || charge.Backoff.String() != "1s" || charge.Timeout.String() != "30s" {
		t.Errorf("Charge policy %+v", charge)
	}
	if len(charge.Skip) != 1 || charge.Skip[0].Func != "invalid" || charge.Skip[0].Args[0].Source != analysis.ArgParent {
		t.Errorf("Charge skip %+v", charge.Skip)
	}
	ship := w.Step("Ship")
	if len(ship.Parents) != 2 || ship.Parents[0].Param != 2 || ship.Parents[1].Param != -1 {
		t.Errorf("Ship binds %+v %+v", ship.Parents[0], ship.Parents[1])
	}
	fin := w.Step("Finalize")
	if !fin.Parents[0].Optional || !fin.Parents[1].Optional || len(fin.ValueParents()) != 2 {
		t.Errorf("Finalize parents %+v %+v", fin.Parents[0], fin.Parents[1])
	}
	if fw := w.Step("FraudWindow"); fw.Kind != analysis.KindSleep || fw.Output != nil || fw.SleepUntil {
		t.Errorf("FraudWindow %+v", fw)
	}
}

// TestStaleGeneratedFileIgnored loads a package whose dag_gen.go refers to
// a step that no longer exists: its errors must not stop the analysis.
func TestStaleGeneratedFileIgnored(t *testing.T) {
	pkgs, diags := analysis.Run(context.Background(), analysis.Config{}, "../../gen/testdata/stale")
	if len(diags) != 0 || len(pkgs) != 1 {
		t.Fatalf("packages %d, diagnostics %v", len(pkgs), diags)
	}
}

func TestLoadErrorsReported(t *testing.T) {
	_, diags := analysis.Run(context.Background(), analysis.Config{}, "../../gen/testdata/err_load_error", "./no/such/dir")
	if !analysis.HasErrors(diags) || len(diags) < 2 {
		t.Fatalf("diagnostics %v", diags)
	}
	for _, d := range diags {
		if d.Code != analysis.LoadError {
			t.Errorf("code %s for %v", d.Code, d)
		}
	}
}

// TestPanicBecomesInternal feeds Analyze a package it cannot work with (no
// type information) and expects an Internal diagnostic, not a crash.
func TestPanicBecomesInternal(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", "package x\n\n//dag:workflow\ntype Order struct{}\n", parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	p := &packages.Package{PkgPath: "example.com/x", Name: "x", Syntax: []*ast.File{f}, Types: types.NewPackage("example.com/x", "x")}
	pkgs, diags := analysis.Analyze(&analysis.Program{Fset: fset, Packages: []*packages.Package{p}})
	if len(pkgs) != 0 || len(diags) != 1 || diags[0].Code != analysis.Internal || diags[0].Severity != analysis.Error ||
		!strings.Contains(diags[0].Message, "example.com/x") || !strings.Contains(diags[0].Message, "please report") {
		t.Fatalf("packages %v, diagnostics %v", pkgs, diags)
	}
}

// TestMappedGraph checks the model of mapped steps (each=, limit=): the
// each= edge, the limit, and the types a mapped step's parameter, its
// children and its predicates see.
func TestMappedGraph(t *testing.T) {
	pkgs, diags := analysis.Run(context.Background(), analysis.Config{}, "../../gen/testdata/mapped")
	for _, d := range diags {
		t.Errorf("diagnostic: %v", d)
	}
	if len(pkgs) != 1 || len(pkgs[0].Workflows) != 1 {
		t.Fatalf("packages %+v", pkgs)
	}
	w := pkgs[0].Workflows[0]
	str := func(t types.Type) string {
		if t == nil {
			return "<nil>"
		}
		return types.TypeString(t, func(*types.Package) string { return "" })
	}
	for _, c := range []struct {
		step, each    string
		limit         int
		output        string // Output: what one element returns
		result        string // ResultType: what children see
		param         string // ParamType of the each= edge
		skippable     bool
		parentsResult []string
	}{
		{"ListImages", "", 0, "[]Image", "[]Image", "", false, nil},
		{"Resize", "ListImages", 16, "Thumb", "[]Thumb", "Image", true, []string{"[]Image"}},
		{"Measure", "ListImages", 0, "int", "[]int", "Image", false, []string{"[]Image"}},
		{"Audit", "ListImages", 0, "<nil>", "<nil>", "Image", false, []string{"[]Image"}},
		{"Upload", "Resize", 4, "URL", "[]URL", "Thumb", true, []string{"[]Thumb"}},
		{"Publish", "", 0, "string", "string", "", true, []string{"[]URL", "<nil>"}},
		{"Report", "", 0, "int", "int", "", true, []string{"[]Thumb"}},
	} {
		s := w.Step(c.step)
		if s == nil {
			t.Fatalf("no step %s", c.step)
		}
		each, param := "", ""
		if s.Mapped() {
			each, param = s.Each.Parent.Func, str(s.ParamType(s.Each))
			if s.Each.Optional || s.Each.Param != 2 {
				t.Errorf("%s: each= edge %+v", c.step, s.Each)
			}
		}
		if each != c.each || s.Limit != c.limit || str(s.Output) != c.output || str(s.ResultType()) != c.result || param != c.param || s.Skippable != c.skippable {
			t.Errorf("%s: each %q limit %d output %s result %s param %s skippable %v, want %+v",
				c.step, each, s.Limit, str(s.Output), str(s.ResultType()), param, s.Skippable, c)
		}
		for i, e := range s.Parents {
			if i < len(c.parentsResult) && str(e.Parent.ResultType()) != c.parentsResult[i] {
				t.Errorf("%s: parent %s gives %s, want %s", c.step, e.Parent.Func, str(e.Parent.ResultType()), c.parentsResult[i])
			}
		}
	}
	// The predicate of mapped step Resize is given ListImages's whole slice.
	if p := w.Step("Resize").Skip; len(p) != 1 || p[0].Args[0].Source != analysis.ArgParent || str(p[0].Args[0].Type) != "[]Image" {
		t.Errorf("Resize skip %+v", p)
	}
}
