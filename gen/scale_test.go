package gen_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dagenhq/dagen/gen"
	"github.com/dagenhq/dagen/gen/gentest"
	"github.com/dagenhq/dagen/internal/analysis"
)

// bigWorkflow writes a workflow of n steps: a chain where every seventh
// step also waits for the step at half its index, and every fiftieth has
// a skip predicate.
func bigWorkflow(n int) string {
	var b strings.Builder
	b.WriteString("package big\n\nimport \"context\"\n\n//dag:workflow\ntype In struct{ N int }\n\n// V is every step's output.\ntype V struct{ N int }\n\nfunc never(in In) bool { return in.N < 0 }\n")
	for i := range n {
		var after, params []string
		if i > 0 {
			after = append(after, fmt.Sprintf("S%04d", i-1))
			params = append(params, "a V")
		}
		if i%7 == 0 && i/2 != i-1 && i > 0 {
			after = append(after, fmt.Sprintf("S%04d", i/2))
			params = append(params, "b V")
		}
		dir := "//dag:step"
		if len(after) > 0 {
			dir += " after=" + strings.Join(after, ",")
		}
		if i%50 == 0 {
			dir += " skip=never"
		}
		fmt.Fprintf(&b, "\n%s\nfunc S%04d(ctx context.Context, in In%s) (V, error) { return V{N: in.N + %d}, nil }\n",
			dir, i, strings.Join(append([]string{""}, params...), ", "), i)
	}
	return b.String()
}

// TestThousandSteps generates a 1,000-step workflow and logs how the time
// splits between loading (go list and type checking) and dagen's own work.
// It asserts behaviour only; the timings are for reading.
func TestThousandSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a throwaway module")
	}
	const n = 1000
	dir := gentest.TempModule(t, map[string]string{"big/big.go": bigWorkflow(n)})
	cfg := gen.Config{Dir: dir, Env: gentest.Env()}

	start := time.Now()
	prog, diags := analysis.Load(context.Background(), cfg, "./big")
	load := time.Since(start)
	if len(diags) > 0 || prog == nil {
		t.Fatalf("load: %v", diags)
	}

	start = time.Now()
	pkgs, diags := analysis.Analyze(prog)
	analyse := time.Since(start)
	if len(diags) > 0 {
		t.Fatalf("analyse: %v", diags)
	}
	start = time.Now()
	files, diags := gen.Emit(pkgs)
	emit := time.Since(start)
	if len(diags) > 0 || len(files) != 1 {
		t.Fatalf("emit: %d files, %v", len(files), diags)
	}
	if steps := len(pkgs[0].Workflows[0].Steps); steps != n {
		t.Fatalf("%d steps", steps)
	}
	t.Logf("%d steps: go/packages load %s; analysis %s + generation %s = %s beyond load; %d KiB generated",
		n, load.Round(time.Millisecond), analyse.Round(time.Millisecond), emit.Round(time.Millisecond),
		(analyse + emit).Round(time.Millisecond), len(files[0].Content)/1024)

	checkChunked(t, files[0].Content)
	if _, err := gen.Write(files); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "vet", "./big")
	cmd.Dir = dir
	cmd.Env = cfg.Env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generated 1,000-step package does not vet: %v\n%s", err, out)
	}
}

// checkChunked checks that a large workflow's generated definition keeps
// its functions short, so that the compiler's cost, which grows faster
// than a function's length, stays linear in the steps: neither the
// definition nor a function it calls holds more statements (a var spec
// counts as one) than two chunks of the generator's 256 guards or steps,
// and every step func, called from a chunk small enough to inline it, is
// kept from being inlined (which would compile its closure twice).
func checkChunked(t *testing.T, src []byte) {
	t.Helper()
	const most = 2*256 + 8
	f, err := parser.ParseFile(token.NewFileSet(), "dag_gen.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := 0
		for _, st := range fn.Body.List {
			n++
			if ds, ok := st.(*ast.DeclStmt); ok {
				n += len(ds.Decl.(*ast.GenDecl).Specs) - 1
			}
		}
		definition := fn.Name.Name == "InDefinition" || strings.HasPrefix(fn.Name.Name, "_dagenInGuards") || strings.HasPrefix(fn.Name.Name, "_dagenInSteps")
		if definition && n > most {
			t.Errorf("func %s holds %d statements, more than %d", fn.Name.Name, n, most)
		}
		if strings.HasPrefix(fn.Name.Name, "_dagenIn_S") {
			steps++
			if fn.Doc == nil || !slices.ContainsFunc(fn.Doc.List, func(c *ast.Comment) bool { return c.Text == "//go:noinline" }) {
				t.Errorf("step func %s is not marked //go:noinline", fn.Name.Name)
			}
		}
	}
	if steps == 0 {
		t.Error("no step funcs (_dagenIn_S…) in the generated file")
	}
}

// layeredWorkflow writes a workflow of n steps in layers of 25 (40 layers
// at 1,000 steps), each step after three steps of the layer above. Every
// tenth step is a sleep, which binds no parameter in its children; every
// seventh has a skip predicate, every third a retry policy.
func layeredWorkflow(n int) string {
	const width = 25
	var b strings.Builder
	b.WriteString("package big\n\nimport (\n\t\"context\"\n\t\"time\"\n)\n\n//dag:workflow\ntype In struct{ N int }\n\n// V is every step's output.\ntype V struct{ N int }\n\nfunc never(in In) bool { return in.N < 0 }\n")
	isSleep := func(k int) bool { return k%10 == 5 }
	for k := range n {
		layer, j := k/width, k%width
		var after, params []string
		sum := "in.N"
		if layer > 0 {
			for d := range 3 {
				p := (layer-1)*width + (j+d)%width
				after = append(after, fmt.Sprintf("S%04d", p))
				if !isSleep(p) {
					params = append(params, fmt.Sprintf("p%d V", d))
					sum += fmt.Sprintf(" + p%d.N", d)
				}
			}
		}
		dir := "//dag:step"
		if isSleep(k) {
			dir = "//dag:sleep"
		}
		if len(after) > 0 {
			dir += " after=" + strings.Join(after, ",")
		}
		if !isSleep(k) && k%7 == 0 {
			dir += " skip=never"
		}
		if !isSleep(k) && k%3 == 0 {
			dir += " retry=2 backoff=1s"
		}
		args := strings.Join(append([]string{"ctx context.Context", "in In"}, params...), ", ")
		if isSleep(k) {
			fmt.Fprintf(&b, "\n%s\nfunc S%04d(%s) (time.Duration, error) { return time.Duration(%s) * time.Millisecond, nil }\n", dir, k, args, sum)
			continue
		}
		fmt.Fprintf(&b, "\n%s\nfunc S%04d(%s) (V, error) { return V{N: %s + %d}, nil }\n", dir, k, args, sum, k)
	}
	return b.String()
}

// BenchmarkBuild generates layered workflows of growing size into a
// throwaway module and measures dagen's generation and go build of the
// generated package. Every measured build has a GOCACHE of its own, warmed
// with the package's dependencies beforehand, so the package itself is
// really compiled and nothing else is. Run it with
//
//	go test ./gen -run '^$' -bench BenchmarkBuild -benchtime 1x
//
// It reports gen-s (load, analysis and generation) and build-s; ns/op is
// the build alone too.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{250, 500, 1000, 2000} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			dir := gentest.TempModule(b, map[string]string{
				"big/big.go":   layeredWorkflow(n),
				"warm/warm.go": "package warm\n\nimport (\n\t_ \"context\"\n\t_ \"fmt\"\n\t_ \"time\"\n\n\t_ \"github.com/dagenhq/dagen/runtime/dag\"\n\t_ \"github.com/dagenhq/dagen/runtime/engine\"\n)\n",
			})
			env := gentest.Env()
			goCmd := func(env []string, args ...string) []byte {
				b.Helper()
				cmd := exec.CommandContext(b.Context(), "go", args...)
				cmd.Dir = dir
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return out
			}
			var genTime, buildTime time.Duration
			b.StopTimer()
			for range b.N {
				cache := append(env[:len(env):len(env)], "GOCACHE="+b.TempDir())
				// Warm the cache with everything but the package itself:
				// warm imports what the generated code imports.
				goCmd(cache, "build", "./warm")
				start := time.Now()
				files, diags := gen.Generate(b.Context(), gen.Config{Dir: dir, Env: cache}, "./big")
				genTime += time.Since(start)
				if len(diags) > 0 || len(files) != 1 {
					b.Fatalf("generate: %d files, %v", len(files), diags)
				}
				if _, err := gen.Write(files); err != nil {
					b.Fatal(err)
				}
				start = time.Now()
				b.StartTimer()
				goCmd(cache, "build", "./big")
				b.StopTimer()
				buildTime += time.Since(start)
			}
			b.ReportMetric(genTime.Seconds()/float64(b.N), "gen-s")
			b.ReportMetric(buildTime.Seconds()/float64(b.N), "build-s")
		})
	}
}

// TestPlainStepsShareTheEngineAdapter: a step that reads no parent's
// output gets the engine's adapter of its signature (engine.StepRun,
// engine.StepRunOutput) as its Run, not a closure of its own, and the
// compiler keeps that adapter from being inlined into each step's func,
// where it compiled the adapter's closure once a step again: a workflow
// of thousands of steps built a third slower (docs/performance.md, "One
// adapter per step signature").
func TestPlainStepsShareTheEngineAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a throwaway module")
	}
	src := "package plain\n\nimport (\n\t\"context\"\n\t\"time\"\n)\n\n//dag:workflow\ntype In struct{ N int }\n"
	// Outputs the adapter's type arguments must spell out: a named type,
	// a tagged anonymous struct, another package's type behind a pointer.
	outputs := []string{"int", "struct {\n\tA int `json:\"a\"`\n}", "*time.Time"}
	for i, out := range outputs {
		src += fmt.Sprintf("\n//dag:step\nfunc A%d(ctx context.Context, in In) error { return nil }\n", i)
		src += fmt.Sprintf("\n//dag:step after=A%d\nfunc B%d(ctx context.Context, in In) (%s, error) {\n\tvar out %s\n\treturn out, nil\n}\n", i, i, out, out)
	}
	dir := gentest.TempModule(t, map[string]string{"plain/plain.go": src})
	cfg := gen.Config{Dir: dir, Env: gentest.Env()}
	files, diags := gen.Generate(context.Background(), cfg, "./plain")
	if len(diags) > 0 || len(files) != 1 {
		t.Fatalf("generate: %d files, %v", len(files), diags)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "dag_gen.go", files[0].Content, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Run" {
				if _, lit := kv.Value.(*ast.FuncLit); lit {
					t.Errorf("a step's Run is a closure of its own at offset %d", kv.Pos())
				}
			}
		}
		return true
	})
	if _, err := gen.Write(files); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "build", "-gcflags=-m", "./plain")
	cmd.Dir = dir
	cmd.Env = cfg.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "can inline") {
		t.Fatalf("the compiler reported no inlining decisions: -gcflags=-m gave\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "inlining call to engine.StepRun") {
			t.Errorf("the engine's step adapter is inlined into a step's func: %s", line)
		}
	}
}
