package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/gen/gentest"
)

// TestBuildTags generates, with -tags, packages whose workflows live in
// files with a build constraint, and checks that dag_gen.go carries it:
// the package builds with the tags and without them.
func TestBuildTags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a throwaway module")
	}
	const plain = "// Package %s builds without tags too.\npackage %s\n"
	step := func(cons, pkg, typ, fn string) string {
		return cons + "\n\npackage " + pkg + "\n\nimport \"context\"\n\n//dag:workflow\ntype " + typ +
			" struct{ N int }\n\n//dag:step\nfunc " + fn + "(ctx context.Context, in " + typ + ") (int, error) { return in.N, nil }\n"
	}
	dir := gentest.TempModule(t, map[string]string{
		// One workflow in one //go:build pro file.
		"pro/plain.go": strings.ReplaceAll(plain, "%s", "pro"),
		"pro/pro.go":   step("//go:build pro", "pro", "Upgrade", "Apply"),
		// Two workflows in files with different constraints: dag_gen.go
		// needs them both.
		"mixed/plain.go": strings.ReplaceAll(plain, "%s", "mixed"),
		"mixed/a.go":     step("//go:build pro || enterprise", "mixed", "A", "RunA"),
		"mixed/b.go":     step("//go:build linux", "mixed", "B", "RunB"),
	})
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Chdir(dir)
	if code, _, errOut := dagen(t, "-tags=pro", "./pro", "./mixed"); code != cli.ExitOK {
		t.Fatalf("dagen -tags=pro: exit %d\n%s", code, errOut)
	}
	for pkg, want := range map[string]string{
		"pro":   "//go:build pro\n",
		"mixed": "//go:build linux && (pro || enterprise)\n",
	} {
		src, err := os.ReadFile(filepath.Join(pkg, "dag_gen.go"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "\n\n"+want+"\npackage "+pkg+"\n") {
			t.Errorf("%s/dag_gen.go does not carry %q:\n%s", pkg, want, src[:min(len(src), 300)])
		}
	}
	for _, args := range [][]string{{"build"}, {"build", "-tags", "pro"}, {"vet", "-tags", "pro"}} {
		cmd := exec.CommandContext(t.Context(), "go", append(args, "./pro", "./mixed")...)
		cmd.Env = gentest.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if code, out, errOut := dagen(t, "diff", "-tags=pro", "./pro", "./mixed"); code != cli.ExitOK {
		t.Errorf("diff after generate: exit %d\n%s%s", code, out, errOut)
	}
}
