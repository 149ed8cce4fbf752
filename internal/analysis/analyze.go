package analysis

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Run loads the packages matching patterns and analyses them: [Load]
// followed by [Analyze]. Load diagnostics come first in the result only by
// position; all diagnostics are sorted together.
func Run(ctx context.Context, cfg Config, patterns ...string) ([]*Package, []Diagnostic) {
	prog, diags := Load(ctx, cfg, patterns...)
	if prog == nil {
		return nil, diags
	}
	pkgs, more := Analyze(prog)
	diags = append(diags, more...)
	SortDiagnostics(diags)
	return pkgs, diags
}

// Analyze finds the workflows of every package in prog and checks them. It
// returns the packages that have at least one workflow and no error, and
// every diagnostic found, sorted by position.
//
// It also returns, marked [Package.Orphan], each package that has no
// directive and no diagnostic but still holds a dag_gen.go with dagen's
// header, so that generating deletes the file instead of leaving code for
// workflows that are gone. A package with a directive in a file its build
// constraints leave out keeps its file: the workflow may only be hidden.
func Analyze(prog *Program) ([]*Package, []Diagnostic) {
	var out []*Package
	var diags []Diagnostic
	for _, p := range prog.Packages {
		a := &analyzer{prog: prog, fset: prog.Fset, pkg: p, funcs: map[*types.Func]*Step{}, wfOf: map[*Step]*Workflow{}}
		res := a.safeRun()
		diags = append(diags, a.diags...)
		switch {
		case res == nil || HasErrors(a.diags):
		case len(res.Workflows) > 0:
			out = append(out, res)
		case len(a.diags) == 0 && a.orphaned():
			res.Orphan = true
			out = append(out, res)
		}
	}
	SortDiagnostics(diags)
	return out, diags
}

// orphaned reports whether the package, known to have no directive, holds
// a dag_gen.go that dagen wrote, and no file that its build constraints
// leave out has a directive either. When a left-out file cannot be read,
// it answers false: keeping a stale file is better than deleting a live one.
func (a *analyzer) orphaned() bool {
	ours := false
	for _, f := range a.pkg.Syntax {
		if isGenerated(a.fset.File(f.Pos()).Name()) {
			ours = len(f.Comments) > 0 && f.Comments[0].Pos() < f.Package &&
				f.Comments[0].List[0].Text == "// "+GeneratedHeader
		}
	}
	if !ours {
		return false
	}
	for _, name := range a.pkg.IgnoredFiles {
		if !strings.HasSuffix(name, ".go") || isGenerated(name) {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil || bytes.HasPrefix(src, []byte(directivePrefix)) || bytes.Contains(src, []byte("\n"+directivePrefix)) {
			return false
		}
	}
	return true
}

// analyzer checks one package.
type analyzer struct {
	prog  *Program
	fset  *token.FileSet
	pkg   *packages.Package
	diags []Diagnostic

	workflows []*Workflow
	wfTypes   []*types.TypeName // parallel to workflows
	funcs     map[*types.Func]*Step
	wfOf      map[*Step]*Workflow
	afters    map[*Step]arg     // the after= argument, when given
	skips     map[*Step]arg     // the skip= argument, when given
	eaches    map[*Step]eachArg // the each= argument, when given
	// eachBroken marks mapped steps whose each= parent gives no slice:
	// their parameter for it has no element type to check.
	eachBroken map[*Step]bool
	// lossChecked holds the types checkLostFields has looked at.
	lossChecked map[types.Type]bool
	// aliasTargets are the types aliased by //dag:workflow aliases,
	// already reported.
	aliasTargets []types.Type
	// unresolved marks steps with an after= name that did not resolve:
	// binding their parameters would only report the same mistake again.
	unresolved map[*Step]bool
	// signals are the signal waits, in source order, with a workflow or
	// not.
	signals []*Step
	// placedBy holds the parent whose workflow a signal wait was put in.
	placedBy map[*Step]*Step
	// results holds the result= argument of workflows, when given;
	// resultPos that of the workflows whose result= resolved.
	results, resultPos map[*Workflow]arg
	// rateLimits are the //dag:ratelimit constants, in source order.
	rateLimits []*RateLimit
	// brokenLimits are the names of //dag:ratelimit constants with an
	// error: steps naming them are not blamed again.
	brokenLimits []string
}

// found is a directive together with the declaration it sits on.
type found struct {
	dir  *directive
	fn   *ast.FuncDecl  // set for a directive on a func
	spec *ast.TypeSpec  // set for a directive on a type
	val  *ast.ValueSpec // set for a directive on a constant
	args map[string]arg
	// dupKeys holds the keys given more than once; args has their first value.
	dupKeys map[string]bool
}

func (a *analyzer) position(p token.Pos) token.Position { return a.fset.Position(p) }

func (a *analyzer) report(pos, end token.Pos, code Code, sev Severity, msg string, related ...Related) {
	d := Diagnostic{Pos: a.position(pos), Code: code, Severity: sev, Message: msg, Related: related}
	if end.IsValid() {
		d.End = a.position(end)
	}
	a.diags = append(a.diags, d)
}

func (a *analyzer) errorf(pos, end token.Pos, code Code, format string, args ...any) {
	a.report(pos, end, code, Error, fmt.Sprintf(format, args...))
}

func (a *analyzer) errorAt(pos token.Position, code Code, msg string, related ...Related) {
	a.diags = append(a.diags, Diagnostic{Pos: pos, Code: code, Severity: Error, Message: msg, Related: related})
}

func (a *analyzer) qualifier(p *types.Package) string {
	if p == a.pkg.Types {
		return ""
	}
	return p.Name()
}

func (a *analyzer) typeString(t types.Type) string { return types.TypeString(t, a.qualifier) }

// safeRun runs the analysis of one package and turns a panic, which would
// be a bug in dagen, into an Internal diagnostic: a bad input must never
// crash go generate.
func (a *analyzer) safeRun() (res *Package) {
	defer func() {
		if r := recover(); r != nil {
			a.diags = append(a.diags, Diagnostic{Code: Internal, Severity: Error,
				Message: fmt.Sprintf("dagen: internal error analysing %s (please report it): %v", a.pkg.PkgPath, r)})
			res = nil
		}
	}()
	return a.run()
}

func (a *analyzer) run() *Package {
	decls := a.collect()
	res := &Package{Path: a.pkg.PkgPath, Name: a.pkg.Name, Types: a.pkg.Types}
	if len(a.pkg.GoFiles) > 0 {
		res.Dir = filepath.Dir(a.pkg.GoFiles[0])
	}
	if len(decls) == 0 {
		return res
	}
	a.afters = map[*Step]arg{}
	a.skips = map[*Step]arg{}
	a.eaches = map[*Step]eachArg{}
	a.eachBroken = map[*Step]bool{}
	a.unresolved = map[*Step]bool{}
	a.results = map[*Workflow]arg{}
	a.resultPos = map[*Workflow]arg{}

	for _, f := range decls {
		switch f.dir.Name {
		case dirWorkflow:
			a.addWorkflow(f)
		case dirRateLimit:
			a.addRateLimit(f)
		}
	}
	var onFailures, schedules []*found
	for _, f := range decls {
		switch f.dir.Name {
		case dirStep, dirChild, dirSleep:
			a.addStep(f)
		case dirSignal:
			a.addSignal(f)
		case dirSchedule:
			schedules = append(schedules, f)
		case dirOnFailure:
			onFailures = append(onFailures, f)
		}
	}
	a.placeSignals()
	for _, f := range onFailures {
		a.addOnFailure(f)
	}
	for _, f := range schedules {
		a.addSchedule(f)
	}
	a.resolveResults()
	a.resolveChildren()
	a.checkWorkflowCycles()
	a.childOutputs()
	for _, w := range a.workflows {
		a.checkWorkflow(w)
	}
	a.computeSkippable()
	for _, w := range a.workflows {
		a.finishWorkflow(w)
	}
	a.checkNames()
	res.Workflows = a.workflows
	res.RateLimits = a.rateLimits
	return res
}

func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
