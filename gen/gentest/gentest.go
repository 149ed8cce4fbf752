package gentest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ModulePath is the module path of dagen.
const ModulePath = "github.com/dagenhq/dagen"

// RepoRoot walks up from the working directory to the root of the dagen
// module and returns it.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module "+ModulePath+"\n") {
			return dir
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("gentest: no %s module above the working directory", ModulePath)
		}
		dir = parent
	}
}

// TempModule creates a module named example.com/tmp in a temporary
// directory, requiring dagen through a replace directive to the repository
// root, holding files (paths relative to the module root). It returns the
// directory. Use [Env] for commands run in it.
func TempModule(t testing.TB, files map[string]string) string {
	t.Helper()
	root := RepoRoot(t)
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{
		"go.mod": fmt.Sprintf("module example.com/tmp\n\ngo 1.26.0\n\nrequire %s v0.0.0\n\nreplace %s => %s\n", ModulePath, ModulePath, root),
		"go.sum": string(sum),
	}
	for name, content := range files {
		all[name] = content
	}
	for name, content := range all {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Env returns the environment for go commands in a module made by
// [TempModule]: the current one, with go.mod and go.sum allowed to gain
// the requirements the replaced module brings.
func Env() []string { return append(os.Environ(), "GOFLAGS=-mod=mod") }
