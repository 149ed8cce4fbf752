package analysis_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestSignalGraph checks the model of signal waits and schedules: waits
// are nodes of their parents' workflow with the payload as output, a
// timeout makes a wait skippable, waits sharing a type are named for
// their stored names, and schedules carry their keys.
func TestSignalGraph(t *testing.T) {
	pkgs, diags := analysis.Run(context.Background(), analysis.Config{}, "../../gen/testdata/signal")
	for _, d := range diags {
		t.Errorf("diagnostic: %v", d)
	}
	if len(pkgs) != 1 || len(pkgs[0].Workflows) != 1 {
		t.Fatalf("packages %+v", pkgs)
	}
	w := pkgs[0].Workflows[0]
	var order []string
	for _, s := range w.Steps {
		order = append(order, s.Name)
	}
	if got := strings.Join(order, ","); got != "Submit,Approval,Decide,Paid,Refund,Book" {
		t.Errorf("nodes in order %s", got)
	}
	for _, c := range []struct {
		name, ident, send, output string
		timeout                   time.Duration
		skippable                 bool
	}{
		{"Approval", "Approval", "SendApproval", "Approval", 72 * time.Hour, true},
		{"Paid", "Paid", "SendPaid", "Payment", 0, false},
		{"Refund", "Refund", "SendRefund", "Refund", 0, false},
	} {
		s := w.Step(c.name)
		if s == nil || s.Kind != analysis.KindSignal {
			t.Fatalf("%s: %+v, want a signal wait", c.name, s)
		}
		if s.Ident() != c.ident || analysis.SendMethod(s) != c.send || types.TypeString(s.Output, func(*types.Package) string { return "" }) != c.output ||
			s.SignalTimeout != c.timeout || s.Skippable != c.skippable || s.Sig != nil || len(s.Parents) != 1 || s.Parents[0].Optional {
			t.Errorf("%s: ident %s send %s output %v timeout %v skippable %v parents %d; want %+v",
				c.name, s.Ident(), analysis.SendMethod(s), s.Output, s.SignalTimeout, s.Skippable, len(s.Parents), c)
		}
	}
	if d := w.Step("Decide"); !d.Parents[1].Optional || d.Parents[1].Param != 3 || d.Skippable {
		t.Errorf("Decide takes Approval as %+v, skippable %v", d.Parents[1], d.Skippable)
	}
	if b := w.Step("Book"); b.Parents[0].Optional || b.Parents[0].Param != 2 || len(b.Skip) != 1 || b.Skip[0].Args[0].Source != analysis.ArgParent {
		t.Errorf("Book takes Paid as %+v, skip %+v", b.Parents[0], b.Skip)
	}
	want := []analysis.Schedule{
		{Func: "NightlyExpenses", Name: "Nightly", Cron: "0 3 * * *", Zone: "Europe/Paris", Tenant: "system", Catchup: "latest"},
		{Func: "Hourly", Name: "Hourly", Cron: "@hourly"},
	}
	if len(w.Schedules) != len(want) {
		t.Fatalf("%d schedules, want %d", len(w.Schedules), len(want))
	}
	for i, sc := range w.Schedules {
		got := *sc
		got.Pos, got.Sig = token.Position{}, nil
		if got != want[i] || sc.Sig == nil {
			t.Errorf("schedule %d = %+v, want %+v", i, got, want[i])
		}
	}
}

// TestRootSignal checks that a signal wait without after= belongs to the
// package's only workflow, and that a skip it may cause by timing out
// cascades to a child that takes it as a plain T.
func TestRootSignal(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/root\n\ngo 1.24\n",
		"root.go": `package root

import "context"

//dag:workflow
type Order struct{ ID string }

//dag:signal
type Go struct{ OK bool }

//dag:signal timeout=1h name=Confirm
type Confirmation struct{ By string }

//dag:step after=Go,Confirm
func Ship(ctx context.Context, o Order, g Go, c Confirmation) (string, error) { return "", nil }
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkgs, diags := analysis.Run(context.Background(), analysis.Config{Dir: dir}, ".")
	for _, d := range diags {
		t.Errorf("diagnostic: %v", d)
	}
	if len(pkgs) != 1 || len(pkgs[0].Workflows) != 1 {
		t.Fatalf("packages %+v", pkgs)
	}
	w := pkgs[0].Workflows[0]
	g, c, ship := w.Step("Go"), w.Step("Confirm"), w.Step("Ship")
	if g == nil || c == nil || ship == nil || len(w.Steps) != 3 {
		t.Fatalf("steps %+v", w.Steps)
	}
	if len(g.Parents) != 0 || g.Skippable || !c.Skippable || c.Ident() != "Confirmation" || !ship.Skippable {
		t.Errorf("Go parents %d skippable %v; Confirm skippable %v ident %s; Ship skippable %v",
			len(g.Parents), g.Skippable, c.Skippable, c.Ident(), ship.Skippable)
	}
}
