package analysis

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"
)

// Mapped steps: each=P runs a step once per element of parent P's slice,
// and limit=N bounds how many of those elements of one run are in flight
// at once. A mapped step's parameter for P is one element; its own value,
// as its children, their predicates and the run's result see it, is the
// slice of its elements' outputs ([Step.ResultType]). Its skip predicates
// apply to the step as a whole and see P's whole slice.

// eachArg is the each= of a step, with the names its after= arguments
// gave (every after=, repeated ones included), so that a name after=
// already reported as unknown is not reported again.
type eachArg struct {
	arg    arg
	afters []string
}

// misplacedMapKey returns the error for each= or limit= on a directive
// that cannot be mapped, and false for any other key or directive.
func misplacedMapKey(dir, key string) (string, bool) {
	if key != "each" && key != "limit" {
		return "", false
	}
	var what string
	switch dir {
	case dirSleep:
		what = "a sleep"
	case dirSignal:
		what = "a signal wait"
	case dirSchedule:
		what = "a schedule"
	case dirOnFailure:
		what = "an onfailure func"
	default:
		return "", false
	}
	if key == "each" {
		return fmt.Sprintf("each= maps a //dag:step; %s cannot be mapped: drop each=", what), true
	}
	return fmt.Sprintf("limit= bounds the elements of a mapped //dag:step; %s cannot be mapped: drop limit=", what), true
}

// readEach reads each= and limit= of a step: the form of their values,
// and limit= without each=. Which parent each= names is resolved with the
// other parents, by resolveEach.
func (a *analyzer) readEach(f *found, s *Step) {
	hasEach := slices.ContainsFunc(f.dir.Args, func(ar arg) bool { return ar.Key == "each" })
	if ar, ok := f.args["each"]; ok {
		ea := eachArg{arg: ar}
		for _, af := range f.dir.Args {
			if af.Key == "after" {
				for _, it := range af.items() {
					ea.afters = append(ea.afters, it.Text)
				}
			}
		}
		a.eaches[s] = ea
		if names := ar.items(); len(names) > 1 {
			a.errorf(ar.ValuePos, ar.End, MalformedDirective, "each=%s: each= maps one parent; name one, as in each=%s", ar.Value, names[0].Text)
		}
	}
	if ar, ok := f.args["limit"]; ok {
		s.Limit = a.readCount(f, "limit", "elements", "16", "no bound")
		if !hasEach {
			a.errorf(ar.KeyPos, ar.End, LimitWithoutEach,
				"limit=%s on %s, which is not mapped: limit= bounds how many elements of a mapped step run at once; add each=P to run %s once per element of parent P's slice, or drop limit=",
				ar.Value, s.Func, s.Func)
		}
	}
}

// mapFailed reports whether s was meant to be mapped (it has each=) but
// its each= did not resolve to a parent: what it gives its children, one
// value or a slice of them, is then unknown.
func (a *analyzer) mapFailed(s *Step) bool {
	_, ok := a.eaches[s]
	return ok && s.Each == nil
}

// resolveEach finds the parent each= names among the step's parents. It
// runs once every step's parents are resolved.
func (a *analyzer) resolveEach(w *Workflow, s *Step) {
	ea, ok := a.eaches[s]
	if !ok {
		return
	}
	ar := ea.arg
	name := ar.Value
	if strings.Contains(name, ",") {
		a.unresolved[s] = true
		return // malformed, reported by readEach
	}
	for _, e := range s.Parents {
		if e.Parent.Func == name {
			s.Each = e
			return
		}
	}
	// Its parameters cannot be bound without knowing which one is an
	// element.
	a.unresolved[s] = true
	if slices.Contains(ea.afters, name) {
		return // after= did not resolve it, and has said why
	}
	var afters []string
	for _, n := range ea.afters {
		if n != "" {
			afters = append(afters, n)
		}
	}
	msg := fmt.Sprintf("each=%s names no parent in after= of %s", name, s.Func)
	switch target := w.Step(name); {
	case suggest(name, afters) != "":
		msg += didYouMean(name, afters)
	case target == s:
		msg = fmt.Sprintf("each=%s names %s itself: each= names one of its parents in after=, the one whose slice it maps", name, s.Func)
	case target != nil:
		msg += ": each= maps one of the step's parents; write after=" + strings.Join(append(afters, name), ",")
	default:
		if hint := didYouMean(name, a.stepFuncs(w)); hint != "" {
			msg += hint
		} else if len(afters) > 0 {
			msg += " (after=" + strings.Join(afters, ",") + ")"
		}
	}
	a.errorf(ar.ValuePos, ar.End, EachNotParent, "%s", msg)
}

// checkEachSlice checks that the each= parent of a mapped step gives a
// slice, as its children see it: a mapped parent gives the slice of its
// elements' outputs, so maps chain.
func (a *analyzer) checkEachSlice(s *Step) {
	e := s.Each
	if e == nil || !e.Parent.valid {
		return // the parent's own error comes first
	}
	ar := a.eaches[s].arg
	p := e.Parent
	t := p.ResultType()
	const want = "each= maps a parent that returns []T"
	var why string
	switch {
	case p.Kind == KindSignal:
		// A signal wait is not mapped over: a step after it that
		// returns the slice is, which also names what is mapped.
		a.eachBroken[s] = true
		a.errorf(ar.ValuePos, ar.End, MappedSignal,
			"each=%[1]s: %[1]s is a signal wait, and a step cannot be mapped over a signal's payload: add a step after %[1]s that returns its slice, and map that", ar.Value)
		return
	case p.Kind == KindSleep:
		why = p.Func + " is a sleep, which gives no value"
	case t == nil:
		why = p.Func + " returns only error, which gives no value"
	default:
		sl, ok := t.Underlying().(*types.Slice)
		switch {
		case !ok:
			why = fmt.Sprintf("%s returns %s, not a slice", p.Func, a.typeString(t))
		case !p.Mapped() && isByte(sl.Elem()):
			// encoding/json stores a []byte as one base64 string, which
			// has no elements to map.
			why = fmt.Sprintf("%s returns %s, which is stored as one base64 string, not as a list", p.Func, a.typeString(t))
		}
	}
	if why == "" {
		return
	}
	a.eachBroken[s] = true
	a.errorf(ar.ValuePos, ar.End, EachNotSlice, "each=%s: %s; %s", ar.Value, why, want)
}

func isByte(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.Uint8
}

// checkEachParam checks the parameter p of mapped step s for its each=
// parent: one element, required.
func (a *analyzer) checkEachParam(s *Step, p *types.Var, index int) {
	if a.eachBroken[s] {
		return // the parent gives no slice: there is no element type to want
	}
	e := s.Each
	elem := s.ParamType(e)
	got := p.Type()
	if types.Identical(got, elem) {
		return
	}
	name := paramName(p, index)
	msg := fmt.Sprintf("parameter %s of %s has type %s; each=%s gives one element of %s",
		name, s.Func, a.typeString(got), s.Each.Parent.Func, a.typeString(e.Parent.ResultType()))
	if _, isMaybe := maybeOf(got); isMaybe {
		msg += ", and a mapped step's each= parent is required"
	}
	a.errorf(p.Pos(), token.NoPos, EachParamType, "%s: %s", msg, writeParam(p, index, a.typeString(elem)))
}

// checkMappedParam reports a parameter of s for mapped parent e that takes
// what one element returns (t, without dag.Maybe) rather than the slice
// of all of them. It returns false when that is not the mistake.
func (a *analyzer) checkMappedParam(s *Step, e *Edge, p *types.Var, index int, t types.Type) bool {
	if !e.Parent.Mapped() || !types.Identical(t, e.Parent.Output) {
		return false
	}
	slice := a.typeString(e.Parent.ResultType())
	fix := slice
	if e.Optional {
		fix = "dag.Maybe[" + slice + "]"
	}
	msg := fmt.Sprintf("%s takes %s from %s, which is mapped (each=%s): its output is %s; %s",
		s.Func, a.typeString(p.Type()), e.Parent.Func, e.Parent.Each.Parent.Func, slice, writeParam(p, index, fix))
	if !e.Optional && !s.Mapped() {
		msg += fmt.Sprintf(", or add each=%s to run %s once per element", e.Parent.Func, s.Func)
	}
	a.errorf(p.Pos(), token.NoPos, MappedParentType, "%s", msg)
	return true
}

// gives says what parent p gives its children, to end "but its parent
// …": "returns Receipt", or "is mapped (each=ListImages), so it gives
// []Thumb".
func (a *analyzer) gives(p *Step) string {
	if p.Kind == KindSignal {
		return "is a signal wait whose payload is " + a.typeString(p.Output)
	}
	if p.Kind == KindChild && p.Child != nil {
		if p.Mapped() {
			return fmt.Sprintf("runs workflow %s once per element (each=%s), so it gives %s, the results of those runs", p.Child.TypeName, p.Each.Parent.Func, a.typeString(p.ResultType()))
		}
		return fmt.Sprintf("runs workflow %s, so it gives %s, that workflow's result", p.Child.TypeName, a.typeString(p.Output))
	}
	if p.Mapped() {
		return fmt.Sprintf("is mapped (each=%s), so it gives %s", p.Each.Parent.Func, a.typeString(p.ResultType()))
	}
	return "returns " + a.typeString(p.Output)
}

// predicateMapHint explains why a skip predicate parameter of type t that
// nothing gives may have been meant for a mapped parent or, on a mapped
// step, for the each= parent, or returns "".
func (a *analyzer) predicateMapHint(s *Step, t types.Type) string {
	var hints []string
	if s.Each != nil && !a.eachBroken[s] && types.Identical(t, s.ParamType(s.Each)) {
		hints = append(hints, fmt.Sprintf("skip predicates apply to mapped step %s as a whole and see each= parent %s's whole slice, %s",
			s.Func, s.Each.Parent.Func, a.typeString(s.Each.Parent.ResultType())))
	}
	for _, e := range s.Parents {
		if e.Parent.Mapped() && !e.Optional && types.Identical(t, e.Parent.Output) {
			hints = append(hints, fmt.Sprintf("parent %s is mapped with each=%s, so it gives %s", e.Parent.Func, e.Parent.Each.Parent.Func, a.typeString(e.Parent.ResultType())))
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, "; ") + ")"
}

// writeParam says how to write parameter p with type t: "write img
// Image", or "write Image" for a parameter without a name.
func writeParam(p *types.Var, index int, t string) string {
	if name := paramName(p, index); !strings.HasPrefix(name, "#") {
		return "write " + name + " " + t
	}
	return "make parameter #" + strconv.Itoa(index+1) + " " + t
}
