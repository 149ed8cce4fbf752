package gen

import (
	"fmt"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"

	"github.com/dagenhq/dagen/internal/analysis"
)

// buildConstraint returns the //go:build expression that dag_gen.go of p
// needs, or nil for none. The generated code refers to the declarations
// of the workflows (input types, steps, signal types, predicates,
// onfailure and schedule funcs), so
// it must build exactly when the files holding them all build: when they
// share one constraint, that one; when they differ, all of them joined
// with &&; files without a constraint add nothing. A workflow in a
// //go:build pro file so gets a dag_gen.go that the untagged build leaves
// out, as it leaves out the workflow.
func buildConstraint(p *analysis.Package) (constraint.Expr, error) {
	files := map[string]bool{}
	add := func(pos token.Position) {
		if pos.Filename != "" {
			files[pos.Filename] = true
		}
	}
	for _, w := range p.Workflows {
		add(w.Pos)
		add(w.OnFailurePos)
		for _, s := range w.Steps {
			add(s.Pos)
			for _, pr := range s.Skip {
				add(pr.DeclaredPos)
			}
		}
		for _, sc := range w.Schedules {
			add(sc.Pos)
		}
	}
	exprs := map[string]constraint.Expr{}
	for name := range files {
		x, err := fileConstraint(name)
		if err != nil {
			return nil, err
		}
		if x != nil {
			exprs[x.String()] = x
		}
	}
	keys := make([]string, 0, len(exprs))
	for k := range exprs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out constraint.Expr
	for _, k := range keys {
		if out == nil {
			out = exprs[k]
			continue
		}
		out = &constraint.AndExpr{X: out, Y: exprs[k]}
	}
	return out, nil
}

// fileConstraint returns the //go:build expression of the Go file name,
// or nil when it has none.
func fileConstraint(name string) (constraint.Expr, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read build constraint: %w", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("read build constraint: %w", err)
	}
	for _, group := range f.Comments {
		if group.Pos() >= f.Package {
			break
		}
		for _, c := range group.List {
			if constraint.IsGoBuild(c.Text) {
				x, err := constraint.Parse(c.Text)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				return x, nil
			}
		}
	}
	return nil, nil
}

// goBuildLine is the //go:build line of x.
func goBuildLine(x constraint.Expr) string {
	return "//go:build " + strings.TrimSpace(x.String())
}
