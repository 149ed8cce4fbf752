package gen_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/gen"
	"github.com/dagenhq/dagen/internal/analysis"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// goldenCase is one directory of testdata: input .go files, and under want/
// the expected dag_gen.go (when generation succeeds) and errs.txt (when
// there are diagnostics). A case may have both: warnings do not stop
// generation.
type goldenCase struct {
	name string
	dir  string // absolute
}

func goldenCases(t *testing.T) []goldenCase {
	t.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir, err := filepath.Abs(filepath.Join("testdata", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, goldenCase{name: e.Name(), dir: dir})
	}
	return cases
}

// TestGolden generates every case in one load (one go list for all of
// them) and compares each case's output and diagnostics with its goldens.
// Run with -update to rewrite them.
func TestGolden(t *testing.T) {
	cases := goldenCases(t)
	patterns := make([]string, len(cases))
	for i, c := range cases {
		patterns[i] = "./testdata/" + c.name
	}
	files, diags := gen.Generate(context.Background(), gen.Config{}, patterns...)

	gotFile := map[string][]byte{}
	for _, f := range files {
		gotFile[filepath.Dir(f.Path)] = f.Content
	}
	gotDiags := map[string][]gen.Diagnostic{}
	for _, d := range diags {
		if d.Pos.Filename == "" {
			t.Errorf("diagnostic without a position: %v", d)
			continue
		}
		dir := filepath.Dir(d.Pos.Filename)
		gotDiags[dir] = append(gotDiags[dir], d)
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if src := gotFile[c.dir]; src != nil {
				if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
					t.Errorf("generated file is not gofmt'ed (err %v)", err)
				}
			}
			var errs []byte
			if ds := gotDiags[c.dir]; len(ds) > 0 {
				errs = []byte(formatDiags(ds, c.dir))
			}
			checkGolden(t, filepath.Join(c.dir, "want", "errs.txt"), errs)
			checkGolden(t, filepath.Join(c.dir, "want", analysis.GeneratedFile), gotFile[c.dir])
		})
	}
}

// formatDiags prints diagnostics as dagen does, with paths relative to the
// case directory and each code after its first line.
func formatDiags(ds []gen.Diagnostic, dir string) string {
	var b strings.Builder
	for _, d := range ds {
		text := strings.ReplaceAll(d.String(), dir+string(filepath.Separator), "")
		first, rest, _ := strings.Cut(text, "\n")
		b.WriteString(first + " [" + d.Code.String() + "]\n")
		if rest != "" {
			b.WriteString(rest + "\n")
		}
	}
	return b.String()
}

// checkGolden compares got with the file at path; nil got means the file
// must not exist. With -update it rewrites or removes the file instead.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	exists := err == nil
	if *update {
		switch {
		case got == nil && exists:
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		case got != nil:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	switch {
	case got == nil && exists:
		t.Errorf("%s exists, but nothing was produced for it:\n%s", rel(path), want)
	case got != nil && !exists:
		t.Errorf("%s is missing (run go test ./gen -update); got:\n%s", rel(path), got)
	case !bytes.Equal(got, want):
		t.Errorf("%s is stale (run go test ./gen -update)\n--- got:\n%s\n--- want:\n%s", rel(path), got, want)
	}
}

func rel(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, path); err == nil {
			return r
		}
	}
	return path
}

// TestEveryCodeHasAGolden checks that every diagnostic code but Internal,
// which only a bug in dagen produces, is shown by at least one golden case.
func TestEveryCodeHasAGolden(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range goldenCases(t) {
		b, err := os.ReadFile(filepath.Join(c.dir, "want", "errs.txt"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if i := strings.LastIndex(line, " ["); i >= 0 && strings.HasSuffix(line, "]\n") {
				seen[line[i+2:len(line)-2]] = true
			}
		}
	}
	for c := analysis.Code(1); !strings.HasPrefix(c.String(), "Code("); c++ {
		if c != analysis.Internal && !seen[c.String()] {
			t.Errorf("no golden case under testdata shows %s", c)
		}
	}
}

// TestDeterministic analyses and generates the success cases several
// times from one load and expects the same bytes every time.
func TestDeterministic(t *testing.T) {
	prog, diags := analysis.Load(context.Background(), gen.Config{}, "./testdata/basic", "./testdata/multi", "./testdata/shapes")
	if analysis.HasErrors(diags) {
		t.Fatalf("load: %v", diags)
	}
	var first []gen.File
	for i := range 5 {
		pkgs, diags := analysis.Analyze(prog)
		if analysis.HasErrors(diags) {
			t.Fatalf("analyse: %v", diags)
		}
		files, diags := gen.Emit(pkgs)
		if len(diags) > 0 || len(files) != 3 {
			t.Fatalf("emit: %d files, %v", len(files), diags)
		}
		if i == 0 {
			first = files
			continue
		}
		for j, f := range files {
			if f.Path != first[j].Path || !bytes.Equal(f.Content, first[j].Content) {
				t.Fatalf("run %d: %s differs from the first run", i, f.Path)
			}
		}
	}
}
