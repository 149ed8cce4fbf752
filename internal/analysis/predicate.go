package analysis

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"
)

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
