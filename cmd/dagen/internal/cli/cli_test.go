package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/gen/gentest"
)

// dagen runs the command in the working directory and returns its exit
// code, stdout and stderr.
func dagen(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func examples(t *testing.T) string { return filepath.Join(gentest.RepoRoot(t), "examples", "order") }

func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		code, out, _ := dagen(t, arg)
		if code != cli.ExitOK || !strings.Contains(out, "Examples:") || !strings.Contains(out, "Exit status:") ||
			!strings.Contains(out, "//go:generate go tool dagen") {
			t.Errorf("%s: exit %d\n%s", arg, code, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Chdir(examples(t))
	for _, args := range [][]string{
		{"-nope"},
		{"graph", "-format", "svg"},
		{"check", "-format", "dot"},
		{"chek"},
	} {
		if code, _, errOut := dagen(t, args...); code != cli.ExitError || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if _, _, errOut := dagen(t, "grpah", "."); !strings.Contains(errOut, `unknown command "grpah": did you mean graph?`) {
		t.Errorf("mistyped command: %q", errOut)
	}
}

// TestExitCodes checks the exit status of every command on a package with
// an error, as dagen --help documents it, and that generate writes nothing
// for it.
func TestExitCodes(t *testing.T) {
	t.Chdir(gentest.RepoRoot(t))
	const bad = "./gen/testdata/err_cycle"
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{bad}, cli.ExitFailure},
		{[]string{"generate", bad}, cli.ExitFailure},
		{[]string{"check", bad}, cli.ExitFailure},
		{[]string{"graph", bad}, cli.ExitFailure},
		{[]string{"diff", bad}, cli.ExitError},
		{[]string{"check", "./gen/testdata/warn_needless_maybe"}, cli.ExitOK},
		{[]string{"check", "./no/such/package"}, cli.ExitFailure},
	} {
		code, out, errOut := dagen(t, tc.args...)
		if code != tc.want {
			t.Errorf("dagen %v: exit %d, want %d\n%s%s", tc.args, code, tc.want, out, errOut)
		}
		if tc.want != cli.ExitOK && errOut == "" {
			t.Errorf("dagen %v: exit %d with nothing on stderr", tc.args, code)
		}
	}
	if _, err := os.Stat(filepath.Join(bad, "dag_gen.go")); err == nil {
		t.Errorf("generate wrote %s/dag_gen.go for a package with errors", bad)
	}
}

func TestCheck(t *testing.T) {
	t.Chdir(gentest.RepoRoot(t))
	code, _, errOut := dagen(t, "check", "./gen/testdata/err_cycle")
	// File names are relative to the working directory, like the go command's.
	if code != cli.ExitFailure || !strings.HasPrefix(errOut, "gen/testdata/err_cycle/x.go:18:6: cycle in workflow Order: Alpha → Beta → Gamma → Alpha\n\t") ||
		!strings.Contains(errOut, "\tgen/testdata/err_cycle/x.go:20:18: Beta runs after Alpha\n") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
	if code, _, errOut := dagen(t, "check", "./gen/testdata/warn_spaced_directive"); code != cli.ExitOK || !strings.Contains(errOut, "warning: ") {
		t.Errorf("warnings only: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := dagen(t, "check", "./examples/..."); code != cli.ExitOK || errOut != "" {
		t.Errorf("examples: exit %d\n%s", code, errOut)
	}
}

func TestGraph(t *testing.T) {
	t.Chdir(examples(t))
	code, out, errOut := dagen(t, "graph")
	for _, want := range []string{"flowchart TD", "Validate --> Charge", "Ship -.-> Finalize", `FraudWindow(["FraudWindow<br/>sleep"])`, "skip: invalid"} {
		if !strings.Contains(out, want) {
			t.Errorf("mermaid lacks %q (exit %d, %s):\n%s", want, code, errOut, out)
		}
	}
	code, out, errOut = dagen(t, "graph", "-format", "dot", "-workflow", "Order", ".")
	for _, want := range []string{`digraph "Order" {`, `"Validate" -> "Charge";`, `"Ship" -> "Finalize" [style=dashed];`} {
		if !strings.Contains(out, want) {
			t.Errorf("dot lacks %q (exit %d, %s):\n%s", want, code, errOut, out)
		}
	}
	if code, _, errOut := dagen(t, "graph", "-workflow", "Refund"); code != cli.ExitFailure || !strings.Contains(errOut, `no workflow "Refund" (have Order)`) {
		t.Errorf("unknown workflow: exit %d, %s", code, errOut)
	}
	if code, _, errOut := dagen(t, "graph", "-workflow", "order"); code != cli.ExitFailure || !strings.Contains(errOut, "did you mean Order?") {
		t.Errorf("mistyped workflow: exit %d, %s", code, errOut)
	}
}

func TestDiffExamples(t *testing.T) {
	t.Chdir(examples(t))
	if code, out, errOut := dagen(t, "diff"); code != cli.ExitOK || out != "" {
		t.Errorf("committed example is stale: exit %d\n%s%s", code, out, errOut)
	}
}

const greetSource = `package greet

//go:generate go run github.com/dagenhq/dagen/cmd/dagen

import (
	"context"
	"strings"
)

//dag:workflow
type Greeting struct{ Name string }

//dag:step
func Upper(ctx context.Context, g Greeting) (string, error) { return strings.ToUpper(g.Name), nil }

//dag:step after=Upper
func Greet(ctx context.Context, g Greeting, upper string) (string, error) { return "hello, " + upper, nil }
`

// TestGenerateLifecycle follows a package through go generate, a signature
// change that leaves dag_gen.go stale (the guard breaks the build, dagen
// still loads the package), regeneration, and the removal of its
// directives, after which generate deletes dag_gen.go.
func TestGenerateLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a throwaway module")
	}
	dir := gentest.TempModule(t, map[string]string{"greet/greet.go": greetSource})
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Chdir(filepath.Join(dir, "greet"))
	build := func() (string, error) {
		cmd := exec.CommandContext(t.Context(), "go", "build", "./...")
		cmd.Dir = dir
		cmd.Env = gentest.Env()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	if code, out, _ := dagen(t, "diff"); code != cli.ExitFailure || !strings.Contains(out, "+// Code generated by dagen. DO NOT EDIT.") {
		t.Fatalf("diff before generate: exit %d\n%s", code, out)
	}
	// The first generation goes through go generate and the //go:generate
	// line of greet.go, as a user runs it.
	gogen := exec.CommandContext(t.Context(), "go", "generate", "./...")
	gogen.Dir = dir
	gogen.Env = gentest.Env()
	if out, err := gogen.CombinedOutput(); err != nil || !strings.Contains(string(out), "dagen: wrote dag_gen.go") {
		t.Fatalf("go generate: %v\n%s", err, out)
	}
	if out, err := build(); err != nil {
		t.Fatalf("generated code does not build: %v\n%s", err, out)
	}
	if code, out, errOut := dagen(t, "diff", "."); code != cli.ExitOK {
		t.Fatalf("diff after generate: exit %d\n%s%s", code, out, errOut)
	}

	// Change Upper's output type: the source is consistent, dag_gen.go is not.
	changed := strings.NewReplacer(
		"(string, error) { return strings.ToUpper(g.Name), nil }", "(Shout, error) { return Shout(strings.ToUpper(g.Name)), nil }",
		"upper string) (string, error) { return \"hello, \" + upper", "upper Shout) (string, error) { return \"hello, \" + string(upper)",
	).Replace(greetSource) + "\n// Shout is a shouted name.\ntype Shout string\n"
	if err := os.WriteFile("greet.go", []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := build()
	if err == nil || !strings.Contains(out, "dag_gen.go") {
		t.Fatalf("stale dag_gen.go still builds: %v\n%s", err, out)
	}
	guard, err := os.ReadFile("dag_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	// The build fails at Upper's guard, and the compiler's own message says
	// to run go generate: the guard's type is named for it. No adapter
	// fails as well: they call the guard variables.
	guardLine := 0
	for i, line := range strings.Split(string(guard), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "_dagenSignature_Upper_changed_run_go_generate" && f[2] == "=" && f[3] == "Upper" {
			guardLine = i + 1
		}
	}
	if guardLine == 0 {
		t.Fatalf("no guard for Upper:\n%s", guard)
	}
	var errLines []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "#") {
			errLines = append(errLines, line)
		}
	}
	if len(errLines) == 0 || !strings.Contains(errLines[0], fmt.Sprintf("dag_gen.go:%d:", guardLine)) {
		t.Fatalf("the build does not fail first at Upper's guard, line %d:\n%s", guardLine, out)
	}
	for _, line := range errLines {
		if !strings.Contains(line, "dag_gen.go:") || !strings.Contains(line, "_changed_run_go_generate value in variable declaration") {
			t.Errorf("a build error that is not a guard's or does not say to run go generate: %s", line)
		}
	}
	t.Logf("go build with a stale dag_gen.go:\n%s", out)
	if code, _, errOut := dagen(t, "check"); code != cli.ExitOK {
		t.Fatalf("check with a stale dag_gen.go: exit %d\n%s", code, errOut)
	}
	if code, _, _ := dagen(t, "diff"); code != cli.ExitFailure {
		t.Fatalf("diff with a stale dag_gen.go: exit %d", code)
	}
	if code, _, errOut := dagen(t, "generate"); code != cli.ExitOK {
		t.Fatalf("regenerate: exit %d\n%s", code, errOut)
	}
	if out, err := build(); err != nil {
		t.Fatalf("regenerated code does not build: %v\n%s", err, out)
	}

	// Drop the directives: dag_gen.go is left over, and generate deletes it.
	if err := os.WriteFile("greet.go", []byte(strings.ReplaceAll(changed, "//dag:", "// was dag ")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := dagen(t, "diff"); code != cli.ExitFailure || !strings.Contains(out, "to be deleted") {
		t.Fatalf("diff with a left-over dag_gen.go: exit %d\n%s", code, out)
	}
	if code, _, errOut := dagen(t); code != cli.ExitOK || !strings.Contains(errOut, "deleted dag_gen.go") {
		t.Fatalf("generate with a left-over dag_gen.go: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat("dag_gen.go"); err == nil {
		t.Fatal("dag_gen.go is still there")
	}
	if out, err := build(); err != nil {
		t.Fatalf("package without workflows does not build: %v\n%s", err, out)
	}
	if code, out, errOut := dagen(t, "diff"); code != cli.ExitOK {
		t.Fatalf("diff after the delete: exit %d\n%s%s", code, out, errOut)
	}
}
