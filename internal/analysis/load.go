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
		for _, d := range packageErrors(p, cfg.Dir) {
			ok = false
			key := d.String()
			if seen[key] {
				continue
			}
			seen[key] = true
			diags = append(diags, d)
		}
		if ok && p.Types != nil && p.TypesInfo != nil {
			prog.Packages = append(prog.Packages, p)
		}
	}
	slices.SortFunc(prog.Packages, func(a, b *packages.Package) int { return strings.Compare(a.PkgPath, b.PkgPath) })
	SortDiagnostics(diags)
	return prog, diags
}

// packageErrors converts the errors of a loaded package to diagnostics,
// leaving out those located in dag_gen.go.
//
// With types loaded from export data, go list compiles the package itself
// too, and a compile failure arrives as one error without a position
// holding the compiler's output ("# pkg" then one tab-indented line per
// error). Its lines in dag_gen.go are dropped like the others; the rest
// repeat what the type checker reported, unless it reported nothing.
func packageErrors(p *packages.Package, dir string) []Diagnostic {
	var out []Diagnostic
	var compiler []packages.Error
	typeErrors := false
	for _, e := range p.Errors {
		pos := parseErrorPos(e.Pos)
		if e.Pos == "" && strings.HasPrefix(e.Msg, "# ") {
			compiler = append(compiler, e)
			continue
		}
		if isGenerated(pos.Filename) {
			continue
		}
		if e.Kind == packages.TypeError || e.Kind == packages.ParseError {
			typeErrors = true
		}
		msg := e.Msg
		if pos.Filename == "" && p.PkgPath != "" && !strings.Contains(msg, p.PkgPath) {
			msg = p.PkgPath + ": " + msg
		}
		out = append(out, Diagnostic{Pos: pos, Code: LoadError, Severity: Error, Message: msg})
	}
	if typeErrors {
		return out
	}
	for _, e := range compiler {
		for _, line := range strings.Split(e.Msg, "\n")[1:] {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			pos, msg := splitCompilerLine(line)
			if isGenerated(pos.Filename) {
				continue
			}
			if pos.Filename != "" && !filepath.IsAbs(pos.Filename) && dir != "" {
				pos.Filename = filepath.Join(dir, pos.Filename)
			}
			out = append(out, Diagnostic{Pos: pos, Code: LoadError, Severity: Error, Message: msg})
		}
	}
	return out
}

func isGenerated(filename string) bool { return filepath.Base(filename) == GeneratedFile }

// splitCompilerLine splits "file:line:col: message" as the compiler prints
// it. A line without a position is all message.
func splitCompilerLine(line string) (token.Position, string) {
	for i := 0; i < len(line); i++ {
		if line[i] == ':' && i+1 < len(line) && line[i+1] == ' ' {
			if pos := parseErrorPos(line[:i]); pos.Line > 0 {
				return pos, line[i+2:]
			}
		}
	}
	return token.Position{}, line
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
