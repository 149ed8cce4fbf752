package layered

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestParents checks the shape: every step below the first layer has two
// or three distinct parents in the layer above, and every step of a
// layer but the last is some step's parent, so no step is a dead end.
func TestParents(t *testing.T) {
	for _, width := range []int{1, 2, 3, 250} {
		s := Shape{Layers: 40, Width: width}
		used := make([]bool, width)
		edges := 0
		for i := range width {
			ps := s.Parents(i)
			edges += len(ps)
			if len(ps) < min(2, width) || len(ps) > 3 {
				t.Errorf("width %d: step %d has parents %v, want two or three", width, i, ps)
			}
			for k, p := range ps {
				if p < 0 || p >= width || (k > 0 && p <= ps[k-1]) {
					t.Errorf("width %d: step %d has parents %v, want distinct indexes of the layer, sorted", width, i, ps)
				}
				used[p] = true
			}
		}
		for i, u := range used {
			if !u {
				t.Errorf("width %d: step %d of a layer is no step's parent", width, i)
			}
		}
		if got, want := s.Edges(), edges*(s.Layers-1); got != want {
			t.Errorf("width %d: Edges() = %d, want %d", width, got, want)
		}
	}
	if got := (Shape{Layers: 40, Width: 250}).Edges(); got != 24375 {
		t.Errorf("40 × 250: %d edges, want 24,375 (2.5 a step below the first layer)", got)
	}
}

// TestSource parses the source written for a small shape: one step func
// a step, after= naming the parents, the last layer returning an int.
func TestSource(t *testing.T) {
	s := Shape{Layers: 4, Width: 6}
	src := Source("flow", s)
	if !bytes.Equal(src, Source("flow", s)) {
		t.Fatal("Source is not deterministic")
	}
	f, err := parser.ParseFile(token.NewFileSet(), "flow.go", src, parser.ParseComments)
	if err != nil {
		t.Fatalf("the source does not parse: %v\n%s", err, src)
	}
	steps := 0
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		steps++
		var l, i int
		if _, err := fmt.Sscanf(fn.Name.Name, "L%02dS%03d", &l, &i); err != nil {
			t.Fatalf("step func %s: %v", fn.Name.Name, err)
		}
		l-- // L01 is layer 0
		dir := fn.Doc.List[len(fn.Doc.List)-1].Text
		want := "//dag:step"
		if l > 0 {
			var names []string
			for _, p := range s.Parents(i) {
				names = append(names, StepName(l-1, p))
			}
			want += " after=" + strings.Join(names, ",")
		}
		if dir != want {
			t.Errorf("step %s: directive %q, want %q", fn.Name.Name, dir, want)
		}
		if results := fn.Type.Results.List; (len(results) == 2) != (l == s.Layers-1) {
			t.Errorf("step %s returns %d values; only the last layer returns an int", fn.Name.Name, len(results))
		}
	}
	if steps != s.Steps() {
		t.Errorf("%d step funcs, want %d", steps, s.Steps())
	}
	if !bytes.Contains(Program("example.com/m/flow"), []byte("layered.Main(os.Args[1:], flow.WideDefinition(), flow.Wide{N: 1})")) {
		t.Errorf("the program does not call Main with the workflow:\n%s", Program("example.com/m/flow"))
	}
}

// TestConfigArgs checks that the drain program reads back what the
// benchmark passes it.
func TestConfigArgs(t *testing.T) {
	c := Config{
		DatabaseURL: "postgres://x@h/db", Schema: "s", Pooler: true, SessionURL: "postgres://y@h/db", AppName: "dagen bench",
		PlanCacheMode: "force_custom_plan", MaxConns: 8, Concurrency: 2048, BatchSize: 512, Poll: 20 * time.Millisecond,
		NoEagerContinue: true, NotifyEvery: -1, PartitionPeriod: time.Hour, Tenant: "bench",
	}
	got, err := parseConfig(c.Args(), &bytes.Buffer{})
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("parseConfig(Args()) = %+v, %v; want %+v", got, err, c)
	}
	if _, err := parseConfig(nil, &bytes.Buffer{}); err == nil {
		t.Error("parseConfig without a database accepted it")
	}
}
