package gen_test

import (
	"context"
	"fmt"
	"os/exec"
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
