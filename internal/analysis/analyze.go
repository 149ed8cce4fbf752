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
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/tools/go/packages"

	"github.com/dagenhq/dagen/internal/textfmt"
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
		a := &analyzer{fset: prog.Fset, pkg: p, funcs: map[*types.Func]*Step{}, wfOf: map[*Step]*Workflow{}}
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
}

// found is a directive together with the declaration it sits on.
type found struct {
	dir  *directive
	fn   *ast.FuncDecl // set for a directive on a func
	spec *ast.TypeSpec // set for a directive on a type
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

	for _, f := range decls {
		if f.dir.Name == dirWorkflow {
			a.addWorkflow(f)
		}
	}
	var onFailures, schedules []*found
	for _, f := range decls {
		switch f.dir.Name {
		case dirStep, dirSleep:
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
	for _, w := range a.workflows {
		a.checkWorkflow(w)
	}
	a.checkNames()
	res.Workflows = a.workflows
	return res
}

func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func (a *analyzer) resolveParents(w *Workflow, s *Step) {
	ar, ok := a.afters[s]
	if !ok {
		return
	}
	seen := map[*Step]token.Position{}
	for _, it := range ar.items() {
		if it.Text == "" {
			a.errorf(it.Pos, it.End, EmptyValue, "empty name in after= of %s", s.Func)
			a.unresolved[s] = true
			continue
		}
		pos := a.position(it.Pos)
		parent, obj := a.node(it.Text, w)
		if parent == nil {
			a.unknownParent(w, s, it, obj)
			a.unresolved[s] = true
			continue
		}
		pw := a.wfOf[parent]
		switch {
		case pw == nil:
			a.unresolved[s] = true
			continue // the parent's own error says why it has no workflow
		case pw != w:
			a.unresolved[s] = true
			msg := fmt.Sprintf("parent %s of %s belongs to workflow %s, not %s", parent.Func, s.Func, pw.TypeName, w.TypeName)
			if by := a.placedBy[s]; by != nil {
				msg += fmt.Sprintf(": signal %s waits in the workflow of its parent %s, and the parents of a signal wait belong to one workflow", s.Func, by.Func)
			}
			related := parent.Func + " takes " + pw.TypeName
			if parent.Kind == KindSignal {
				related = "signal " + parent.Func + " waits in workflow " + pw.TypeName
			}
			a.errorAt(pos, ForeignParent, msg, Related{Pos: parent.Pos, Message: related})
			continue
		case parent == s:
			what := "step"
			if s.Kind == KindSignal {
				what = "signal"
			}
			a.errorAt(pos, SelfParent, fmt.Sprintf("%s %s lists itself in after=", what, s.Func))
			continue
		}
		if first, dup := seen[parent]; dup {
			a.errorAt(pos, RepeatedParent, fmt.Sprintf("parent %s listed twice in after= of %s", parent.Func, s.Func),
				Related{Pos: first, Message: "first " + parent.Func})
			continue
		}
		seen[parent] = pos
		s.Parents = append(s.Parents, &Edge{Parent: parent, Param: -1, Pos: pos})
	}
}

// unknownParent reports an after= name of s that names no node. w is the
// workflow of s, or nil when s is a signal wait whose workflow is unknown:
// the names of every workflow are then the candidates of "did you mean".
func (a *analyzer) unknownParent(w *Workflow, s *Step, it item, obj types.Object) {
	var nodes []*Step
	if w != nil {
		nodes = w.Steps
	} else {
		for _, w := range a.workflows {
			nodes = append(nodes, w.Steps...)
		}
		nodes = append(nodes, a.signals...)
	}
	var names []string
	for _, n := range nodes {
		if n != s && !slices.Contains(names, n.Func) {
			names = append(names, n.Func)
		}
	}
	for _, sig := range a.signals {
		if sig.TypeName == it.Text && sig.Name != it.Text {
			// The type's name, where its stored name is wanted.
			a.errorf(it.Pos, it.End, UnknownParent, "parent %s of %s is the type of signal %q: after= names a signal wait by its name; write %s", it.Text, s.Func, sig.Name, sig.Name)
			return
		}
	}
	switch {
	case obj == nil:
		msg := fmt.Sprintf("unknown parent %s in after= of %s", it.Text, s.Func)
		if hint := didYouMean(it.Text, names); hint != "" {
			msg += hint
		} else {
			for _, other := range nodes {
				if other.Name == it.Text && other.Kind != KindSignal {
					msg += fmt.Sprintf(": after= takes func names; step %q is func %s", other.Name, other.Func)
					break
				}
			}
		}
		a.errorf(it.Pos, it.End, UnknownParent, "%s", msg)
	default:
		kind := "a func without //dag:step or //dag:sleep"
		switch obj.(type) {
		case *types.Func:
		case *types.TypeName:
			kind = "a type without //dag:signal"
		default:
			kind = "not a func"
		}
		a.errorf(it.Pos, it.End, UnknownParent, "parent %s of %s is not a step: %s is %s", it.Text, s.Func, it.Text, kind)
	}
}

// checkCycles reports each strongly connected component of the graph as one
// cycle, printed as its whole path in the order the steps would run, the
// way `dagen graph` draws edges: starting at the step first in source
// order, "A → B" when B lists A in after=, with one related line per hop
// at the after= entry that makes it.
func (a *analyzer) checkCycles(w *Workflow) {
	index := make(map[*Step]int, len(w.Steps))
	for i, s := range w.Steps {
		index[s] = i
	}
	for _, comp := range stronglyConnected(w.Steps, index) {
		if len(comp) < 2 {
			continue
		}
		in := map[*Step]bool{}
		start := comp[0]
		for _, s := range comp {
			in[s] = true
			if index[s] < index[start] {
				start = s
			}
		}
		// The path runs from a step to its parent; reversed, it runs in
		// the order the steps would run.
		path := shortestCycle(start, in)
		slices.Reverse(path)
		names := []string{start.Func}
		var related []Related
		for _, h := range path {
			names = append(names, h.from.Func)
			related = append(related, Related{Pos: h.edge.Pos, Message: h.from.Func + " runs after " + h.edge.Parent.Func})
		}
		a.errorAt(start.Pos, Cycle, fmt.Sprintf("cycle in workflow %s: %s", w.TypeName, strings.Join(names, " → ")), related...)
	}
}

type hop struct {
	from *Step
	edge *Edge
}

// shortestCycle finds the shortest path from start back to itself within
// the component, trying parents in after= order so the answer is stable.
func shortestCycle(start *Step, in map[*Step]bool) []hop {
	prev := map[*Step]hop{}
	queue := []*Step{start}
	visited := map[*Step]bool{start: true}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, e := range s.Parents {
			p := e.Parent
			if !in[p] {
				continue
			}
			if p == start {
				path := []hop{{from: s, edge: e}}
				for cur := s; cur != start; {
					h := prev[cur]
					path = append(path, h)
					cur = h.from
				}
				slices.Reverse(path)
				return path
			}
			if !visited[p] {
				visited[p] = true
				prev[p] = hop{from: s, edge: e}
				queue = append(queue, p)
			}
		}
	}
	return nil
}

// stronglyConnected returns the strongly connected components of the graph
// whose edges run from a step to its parents (Tarjan's algorithm).
func stronglyConnected(steps []*Step, index map[*Step]int) [][]*Step {
	n := len(steps)
	low := make([]int, n)
	order := make([]int, n)
	onStack := make([]bool, n)
	for i := range order {
		order[i] = -1
	}
	var stack []int
	var comps [][]*Step
	counter := 0
	var visit func(v int)
	visit = func(v int) {
		order[v], low[v] = counter, counter
		counter++
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range steps[v].Parents {
			u := index[e.Parent]
			if order[u] < 0 {
				visit(u)
				low[v] = min(low[v], low[u])
			} else if onStack[u] {
				low[v] = min(low[v], order[u])
			}
		}
		if low[v] == order[v] {
			var comp []*Step
			for {
				u := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[u] = false
				comp = append(comp, steps[u])
				if u == v {
					break
				}
			}
			comps = append(comps, comp)
		}
	}
	for v := range steps {
		if order[v] < 0 {
			visit(v)
		}
	}
	return comps
}

// bindParams matches the step's parameters after the input with the
// outputs of its parents, in after= order.
func (a *analyzer) bindParams(w *Workflow, s *Step) {
	if !s.valid || a.unresolved[s] || s.Kind == KindSignal {
		return // a signal wait has no parameters: its parents only order it
	}
	var values []*Edge
	for _, e := range s.Parents {
		if !e.Parent.valid || a.mapFailed(e.Parent) {
			return // the parent's own error comes first; binding would only guess
		}
		if e.Parent.Output != nil {
			values = append(values, e)
		}
	}
	params := s.Sig.Params()
	extra := params.Len() - 2
	for i, e := range values {
		if i >= extra {
			break
		}
		e.Param = 2 + i
		p := params.At(e.Param)
		if e == s.Each {
			// One element, and required: a skipped each= parent skips
			// the mapped step as a whole.
			a.checkEachParam(s, p, e.Param)
			continue
		}
		t := p.Type()
		if inner, ok := maybeOf(t); ok {
			e.Optional = true
			t = inner
		}
		if !types.Identical(t, s.ParamType(e)) {
			if a.checkMappedParam(s, e, p, e.Param, t) {
				continue
			}
			msg := fmt.Sprintf("parameter %s of %s has type %s, but its parent %s %s",
				paramName(p, e.Param), s.Func, a.typeString(p.Type()), e.Parent.Func, a.gives(e.Parent))
			for _, other := range values {
				if other != e && types.Identical(t, s.ParamType(other)) {
					msg += fmt.Sprintf(": parameters bind parents in after= order (%s)", strings.Join(funcsOf(values), ", "))
					break
				}
			}
			a.errorf(p.Pos(), token.NoPos, ParamType, "%s", msg)
		}
	}
	switch {
	case extra > len(values):
		p := params.At(2 + len(values))
		msg := fmt.Sprintf("%s takes %s, but its parents give %s", s.Func, textfmt.Count(extra, "parent parameter"), textfmt.Count(len(values), "value"))
		if len(values) > 0 {
			msg += " (" + a.describeValues(values) + ")"
		}
		var silent []*Edge
		for _, e := range s.Parents {
			if e.Parent.Output == nil {
				silent = append(silent, e)
			}
		}
		if len(silent) == 0 {
			msg += fmt.Sprintf(": parameter %s has no parent; add its step to after=", paramName(p, 2+len(values)))
		} else {
			// The parameter was most likely meant for a parent that is in
			// after= but gives nothing to bind: say so, rather than ask
			// for a parent that is already there.
			msg += ": " + a.describeSilent(silent) + fmt.Sprintf("; drop parameter %s", paramName(p, 2+len(values)))
			var steps []string
			for _, e := range silent {
				if e.Parent.Kind == KindStep {
					steps = append(steps, e.Parent.Func)
				}
			}
			if len(steps) > 0 {
				msg += fmt.Sprintf(", or make %s return (T, error)", strings.Join(steps, " or "))
			}
		}
		a.errorf(p.Pos(), token.NoPos, ParamCount, "%s", msg)
	case extra < len(values):
		for _, e := range values[extra:] {
			out := a.typeString(s.ParamType(e))
			if e == s.Each {
				a.errorAt(e.Pos, ParamCount, fmt.Sprintf("each= parent %s of %s gives one element of %s per run of %s, but %s has no parameter for it: add a parameter of type %s",
					e.Parent.Func, s.Func, a.typeString(e.Parent.ResultType()), s.Func, s.Func, out))
				continue
			}
			a.errorAt(e.Pos, ParamCount, fmt.Sprintf("parent %s of %s %s, but %s has no parameter for it: add a parameter of type %s or dag.Maybe[%s]",
				e.Parent.Func, s.Func, a.gives(e.Parent), s.Func, out, out))
		}
	}
}

func (a *analyzer) describeValues(values []*Edge) string {
	parts := make([]string, len(values))
	for i, e := range values {
		parts[i] = e.Parent.Func + " " + a.typeString(e.Parent.ResultType())
	}
	return strings.Join(parts, ", ")
}

// describeSilent says why parents that produce no value bind no
// parameter: "Wait is a sleep and Audit returns only error, so they give
// no value and bind nothing".
func (a *analyzer) describeSilent(edges []*Edge) string {
	parts := make([]string, len(edges))
	for i, e := range edges {
		if e.Parent.Kind == KindSleep {
			parts[i] = e.Parent.Func + " is a sleep"
		} else {
			parts[i] = e.Parent.Func + " returns only error"
		}
	}
	they := "it gives no value and binds nothing"
	if len(edges) > 1 {
		they = "they give no value and bind nothing"
	}
	return strings.Join(parts, " and ") + ", so " + they
}

func funcsOf(edges []*Edge) []string {
	out := make([]string, len(edges))
	for i, e := range edges {
		out[i] = e.Parent.Func
	}
	return out
}

func paramName(p *types.Var, i int) string {
	if p.Name() != "" && p.Name() != "_" {
		return p.Name()
	}
	return "#" + strconv.Itoa(i+1)
}

// computeSkippable marks the steps that can end SKIPPED, following the
// truth table of the engine: a step is skipped when a skip predicate holds,
// when a required parent is skipped, or when all its parents are skipped;
// a signal wait with timeout= is skipped when no signal came in time.
func (a *analyzer) computeSkippable(w *Workflow) {
	const (
		unknown = iota
		visiting
		done
	)
	state := map[*Step]int{}
	var visit func(s *Step) bool
	visit = func(s *Step) bool {
		switch state[s] {
		case visiting:
			return false // a cycle, already reported
		case done:
			return s.Skippable
		}
		state[s] = visiting
		// A skip predicate or a wait that may time out can skip the
		// step by itself.
		_, skippable := a.skips[s]
		if s.Kind == KindSignal && s.SignalTimeout > 0 {
			skippable = true
		}
		all := len(s.Parents) > 0
		for _, e := range s.Parents {
			ps := visit(e.Parent)
			if ps && !e.Optional {
				skippable = true
			}
			all = all && ps
		}
		s.Skippable = skippable || all
		state[s] = done
		return s.Skippable
	}
	for _, s := range w.Steps {
		visit(s)
	}
}

// resolvePredicates reads skip= and works out what each predicate
// parameter is given.
func (a *analyzer) resolvePredicates(w *Workflow, s *Step) {
	ar, ok := a.skips[s]
	if !ok {
		return
	}
	scope := a.pkg.Types.Scope()
	for _, it := range ar.items() {
		if it.Text == "" {
			a.errorf(it.Pos, it.End, EmptyValue, "empty name in skip= of %s", s.Func)
			continue
		}
		obj := scope.Lookup(it.Text)
		fn, isFunc := obj.(*types.Func)
		if !isFunc {
			msg := fmt.Sprintf("undefined skip predicate %s of %s", it.Text, s.Func)
			if obj != nil {
				msg = fmt.Sprintf("skip predicate %s of %s is not a func", it.Text, s.Func)
			} else {
				msg += didYouMean(it.Text, a.packageFuncs())
			}
			a.errorf(it.Pos, it.End, UndefinedPredicate, "%s", msg)
			continue
		}
		p := &Predicate{Func: fn.Name(), Sig: fn.Type().(*types.Signature), Pos: a.position(it.Pos), DeclaredPos: a.position(fn.Pos())}
		if a.checkPredicate(w, s, p, it) {
			s.Skip = append(s.Skip, p)
		}
	}
}

func (a *analyzer) packageFuncs() []string {
	var out []string
	scope := a.pkg.Types.Scope()
	for _, name := range scope.Names() {
		if _, ok := scope.Lookup(name).(*types.Func); ok {
			out = append(out, name)
		}
	}
	return out
}

// predicateSource is something a predicate parameter can be given.
type predicateSource struct {
	arg  PredicateArg
	what string
}

func (a *analyzer) checkPredicate(w *Workflow, s *Step, p *Predicate, it item) bool {
	related := Related{Pos: p.DeclaredPos, Message: "predicate " + p.Func + " declared here"}
	sig := p.Sig
	if sig.TypeParams().Len() > 0 {
		a.report(it.Pos, it.End, BadPredicate, Error, fmt.Sprintf("skip predicate %s is generic: it must be a plain func", p.Func), related)
		return false
	}
	if sig.Variadic() {
		a.report(it.Pos, it.End, Variadic, Error, fmt.Sprintf("skip predicate %s is variadic", p.Func), related)
		return false
	}
	if sig.Recv() != nil {
		return false // package-scope funcs have no receiver; be safe
	}
	res := sig.Results()
	switch {
	case res.Len() == 1 && isBool(res.At(0).Type()):
	case res.Len() == 2 && isBool(res.At(0).Type()) && isError(res.At(1).Type()):
		p.ReturnsErr = true
	default:
		a.report(it.Pos, it.End, BadPredicate, Error,
			fmt.Sprintf("skip predicate %s must return bool or (bool, error), not %s", p.Func, a.typeString(res)), related)
		return false
	}
	sources := []predicateSource{{arg: PredicateArg{Source: ArgInput, Type: w.Input}, what: "the input " + w.TypeName}}
	var optional []*Edge
	if s.valid {
		for i, e := range s.Parents {
			if e.Param < 0 {
				continue
			}
			if e.Optional {
				optional = append(optional, e)
				continue
			}
			sources = append(sources, predicateSource{
				arg:  PredicateArg{Source: ArgParent, Parent: i, Type: e.Parent.ResultType()},
				what: "parent " + e.Parent.Func,
			})
		}
	}
	ok := true
	params := sig.Params()
	for i := range params.Len() {
		param := params.At(i)
		t := param.Type()
		if isContext(t) {
			p.Args = append(p.Args, PredicateArg{Source: ArgContext, Type: t})
			continue
		}
		var matches []predicateSource
		for _, src := range sources {
			if types.Identical(t, src.arg.Type) {
				matches = append(matches, src)
			}
		}
		switch len(matches) {
		case 1:
			p.Args = append(p.Args, matches[0].arg)
		case 0:
			ok = false
			if !s.valid || a.unresolved[s] {
				continue // the step's own error makes its parents unknown
			}
			var can []string
			for _, src := range sources {
				can = append(can, a.typeString(src.arg.Type)+" ("+src.what+")")
			}
			msg := fmt.Sprintf("parameter %s of skip predicate %s has type %s, which step %s cannot give it; it can take context.Context, %s",
				paramName(param, i), p.Func, a.typeString(t), s.Func, strings.Join(can, ", "))
			for _, e := range optional {
				if types.Identical(t, e.Parent.ResultType()) {
					msg += fmt.Sprintf(" (parent %s is optional, taken as dag.Maybe, so its output may be missing)", e.Parent.Func)
				}
			}
			msg += a.predicateMapHint(s, t)
			a.report(param.Pos(), token.NoPos, BadPredicateParam, Error, msg,
				Related{Pos: p.Pos, Message: "used by " + s.Func + " here"})
		default:
			ok = false
			whats := make([]string, len(matches))
			for k, m := range matches {
				whats[k] = m.what
			}
			a.report(param.Pos(), token.NoPos, AmbiguousPredicateParam, Error,
				fmt.Sprintf("parameter %s of skip predicate %s has type %s, which step %s gets from %s: dagen cannot tell which to pass; give them distinct types",
					paramName(param, i), p.Func, a.typeString(t), s.Func, strings.Join(whats, " and ")),
				Related{Pos: p.Pos, Message: "used by " + s.Func + " here"})
		}
	}
	return ok
}

// GoName returns the name generated identifiers of a workflow are built
// from: the input type's name, with its first letter upper-cased when the
// type is exported ("Order" → OrderWorkflow), as it is (lower-case) when
// it is not ("order" → orderWorkflow).
//
// An unexported input type says the workflow is the package's own
// business. Exported API around it would be API that other packages can
// see but hardly use (they cannot name the input they must pass to Run),
// which linters flag and reviewers question; a warning would leave
// exporting the type as the only way out. So the API follows the input's
// visibility, the way Go ties visibility to the name: see [NewFuncName].
func GoName(w *Workflow) string {
	if !token.IsExported(w.TypeName) {
		return w.TypeName
	}
	return exported(w.TypeName)
}

// NewFuncName returns the name of the generated func that registers a
// workflow and returns its handle: NewOrderWorkflow, or newOrderWorkflow
// for an unexported input type order.
func NewFuncName(w *Workflow) string {
	if !token.IsExported(w.TypeName) {
		return "new" + exported(w.TypeName) + "Workflow"
	}
	return "New" + GoName(w) + "Workflow"
}

// ResultField returns the name of a step's or a signal wait's field in
// the generated result struct.
func ResultField(s *Step) string { return exported(s.Ident()) }

func exported(name string) string {
	r, size := utf8.DecodeRuneInString(name)
	if size == 0 {
		return name
	}
	return string(unicode.ToUpper(r)) + name[size:]
}

// GeneratedNames returns the package-level names generated for a workflow.
func GeneratedNames(w *Workflow) []string {
	n := GoName(w)
	return []string{n + "Fingerprint", n + "Definition", n + "Workflow", NewFuncName(w), n + "Run", n + "Result"}
}

// checkNames reports generated names that the package already declares
// outside dag_gen.go, and result fields that would clash.
func (a *analyzer) checkNames() {
	scope := a.pkg.Types.Scope()
	owner := map[string]*Workflow{}
	for _, w := range a.workflows {
		clashes := map[*Workflow][]string{}
		var order []*Workflow
		for _, name := range GeneratedNames(w) {
			if other := owner[name]; other != nil {
				if clashes[other] == nil {
					order = append(order, other)
				}
				clashes[other] = append(clashes[other], name)
				continue
			}
			owner[name] = w
			obj := scope.Lookup(name)
			if obj == nil || !obj.Pos().IsValid() {
				continue
			}
			pos := a.position(obj.Pos())
			if isGenerated(pos.Filename) {
				continue
			}
			a.errorAt(pos, NameCollision, fmt.Sprintf("%s is generated for workflow %s: rename this declaration", name, w.TypeName),
				Related{Pos: w.Pos, Message: "workflow " + w.TypeName})
		}
		for _, other := range order {
			a.errorAt(w.Pos, NameCollision, fmt.Sprintf("workflows %s and %s would both generate %s: rename one of the types",
				other.TypeName, w.TypeName, strings.Join(clashes[other], ", ")), Related{Pos: other.Pos, Message: "workflow " + other.TypeName})
		}
		a.checkNodeNames(w)
	}
}

// checkNodeNames reports the nodes of w whose generated names would be
// the same: fields of the result, the funcs that return their
// engine.Step (named for [Step.Ident]), and the Send methods of signal
// waits, which must not be a method the handle has anyway either.
func (a *analyzer) checkNodeNames(w *Workflow) {
	idents := map[string]*Step{}
	fields := map[string]*Step{}
	for _, s := range w.Steps {
		if other := idents[s.Ident()]; other != nil {
			// Two funcs have two names: only a signal wait meets another
			// node here.
			a.errorAt(s.Pos, NameCollision, fmt.Sprintf("%s and %s would both generate _dagen%s_%s: %s",
				a.nodeWhat(other), a.nodeWhat(s), GoName(w), s.Ident(), a.renameFix(other, s)))
			continue
		}
		idents[s.Ident()] = s
		if s.Output == nil {
			continue
		}
		f := ResultField(s)
		switch other := fields[f]; {
		case other == nil:
			fields[f] = s
		case s.Kind != KindSignal && other.Kind != KindSignal:
			a.errorAt(s.Pos, NameCollision, fmt.Sprintf("steps %s and %s would both be field %s of %sResult: rename one", other.Func, s.Func, f, GoName(w)))
		default:
			// Send methods are named as fields are, Send + field: two
			// waits whose methods would be the same end here too.
			a.errorAt(s.Pos, NameCollision, fmt.Sprintf("%s and %s would both be field %s of %sResult: %s",
				a.nodeWhat(other), a.nodeWhat(s), f, GoName(w), a.renameFix(other, s)))
		}
	}
	for _, s := range w.Steps {
		if m := SendMethod(s); s.Kind == KindSignal && slices.Contains(handleMethods, m) {
			a.errorAt(s.Pos, NameCollision, fmt.Sprintf("%s would generate method %s, which %sWorkflow has already: %s",
				a.nodeWhat(s), m, GoName(w), a.renameFix(s)))
		}
	}
}

// renameFix says how to tell nodes apart whose generated names would be
// the same: rename a step's func, a signal's type, or a signal named for
// its stored name (its type is another's too) by name=.
func (a *analyzer) renameFix(nodes ...*Step) string {
	var fixes []string
	for _, s := range nodes {
		switch {
		case s.Kind != KindSignal:
			fixes = append(fixes, "rename func "+s.Func)
		case s.Ident() == s.TypeName:
			fixes = append(fixes, "rename type "+s.TypeName)
		default:
			fixes = append(fixes, fmt.Sprintf("give signal %q another name=", s.Name))
		}
	}
	if len(fixes) == 1 {
		return fixes[0]
	}
	return strings.Join(fixes, ", or ")
}
