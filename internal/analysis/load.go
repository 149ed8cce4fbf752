package analysis

import (
	"context"
	"fmt"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// GeneratedFile is the name of the file dagen writes into each package.
const GeneratedFile = "dag_gen.go"

// Config says where and how packages are loaded.
type Config struct {
	// Dir is the directory the go command runs in; empty means the
	// current directory.
	Dir string
	// Env is the go command's environment; nil means the current process's.
	Env []string
	// BuildFlags are passed to the go command, such as "-tags=integration".
	BuildFlags []string
}

// Program is a set of loaded packages sharing one file set.
type Program struct {
	Fset *token.FileSet
	// Packages are the packages the patterns matched, sorted by import
	// path. Packages with load errors are left out.
	Packages []*packages.Package
}

const loadMode = packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
	packages.NeedTypes | packages.NeedTypesInfo | packages.NeedModule

// Load loads the packages matching patterns (default ".") with their syntax
// and types.
//
// Errors located in dag_gen.go are ignored: that file is our own output, and
// it is stale exactly when the user has changed the workflow and is about
// to regenerate it. Every other error is reported as a [LoadError]
// diagnostic, and its package is left out of the program.
func Load(ctx context.Context, cfg Config, patterns ...string) (*Program, []Diagnostic) {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	fset := token.NewFileSet()
	pcfg := &packages.Config{
		Context:    ctx,
		Mode:       loadMode,
		Dir:        cfg.Dir,
		Env:        cfg.Env,
		BuildFlags: cfg.BuildFlags,
		Fset:       fset,
	}
	pkgs, err := packages.Load(pcfg, patterns...)
	if err != nil {
		return nil, []Diagnostic{{Code: LoadError, Message: fmt.Sprintf("load packages %s: %v", strings.Join(patterns, " "), err)}}
	}
	prog := &Program{Fset: fset}
	var diags []Diagnostic
	seen := map[string]bool{}
	for _, p := range pkgs {
		ok := true
		for _, e := range p.Errors {
			pos := parseErrorPos(e.Pos)
			if filepath.Base(pos.Filename) == GeneratedFile {
				continue
			}
			ok = false
			msg := e.Msg
			if pos.Filename == "" && !strings.Contains(msg, p.PkgPath) && p.PkgPath != "" {
				msg = p.PkgPath + ": " + msg
			}
			key := e.Pos + "\x00" + msg
			if seen[key] {
				continue
			}
			seen[key] = true
			diags = append(diags, Diagnostic{Pos: pos, Code: LoadError, Severity: Error, Message: msg})
		}
		if ok && p.Types != nil && p.TypesInfo != nil {
			prog.Packages = append(prog.Packages, p)
		}
	}
	slices.SortFunc(prog.Packages, func(a, b *packages.Package) int { return strings.Compare(a.PkgPath, b.PkgPath) })
	SortDiagnostics(diags)
	return prog, diags
}

// parseErrorPos parses the "file:line:col", "file:line" or "file" position
// of a packages.Error. File names may themselves contain colons.
func parseErrorPos(s string) token.Position {
	if s == "" || s == "-" {
		return token.Position{}
	}
	var nums []int
	rest := s
	for len(nums) < 2 {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			break
		}
		nums = append(nums, n)
		rest = rest[:i]
	}
	p := token.Position{Filename: rest}
	switch len(nums) {
	case 1:
		p.Line = nums[0]
	case 2:
		p.Line, p.Column = nums[1], nums[0]
	}
	return p
}
