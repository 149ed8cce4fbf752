package gen_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dagenhq/dagen/internal/analysis"
)

// TestGoldenCompileAndRun vets, builds and runs every success case (every
// case with a want/dag_gen.go) with its golden dag_gen.go in place,
// through a go build overlay, so the goldens are known to compile, to pass
// go vet and to work on the engine, not only to match.
// Each case carries a run_test.go that drives its workflow on dagtest.
func TestGoldenCompileAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on the golden cases")
	}
	replace := map[string]string{}
	var pkgs []string
	for _, c := range goldenCases(t) {
		want := filepath.Join(c.dir, "want", analysis.GeneratedFile)
		if _, err := os.Stat(want); err != nil {
			continue
		}
		replace[filepath.Join(c.dir, analysis.GeneratedFile)] = want
		pkgs = append(pkgs, "./testdata/"+c.name)
	}
	if len(pkgs) == 0 {
		t.Fatal("no success cases")
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(path, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	// go test vets only a few checks: go vet runs them all, so a golden
	// that compiles but that vet rejects (an unused result, a bad printf)
	// fails too.
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"vet", "-overlay=" + path}, pkgs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet of the golden cases %v: %v\n%s", pkgs, err, out)
	}
	cmd = exec.CommandContext(t.Context(), "go", append([]string{"test", "-count=1", "-overlay=" + path}, pkgs...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("go test %v:\n%s", pkgs, out)
	if err != nil {
		t.Fatalf("golden cases do not build or pass: %v", err)
	}
}
