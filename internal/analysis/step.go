package analysis

import (
	"fmt"
	"go/token"
	"go/types"
	"strconv"
	"strings"
)

// shape describes the signature a directive wants, for messages.
func shape(dir string) string {
	switch dir {
	case dirSleep:
		return "func(ctx context.Context, in In, parents...) (time.Duration or time.Time, error)"
	case dirOnFailure:
		return "func(ctx context.Context, in In, f dag.Failure) error"
	case dirChild:
		return "func(ctx context.Context, in In, parents...) (ChildIn, error), ChildIn the input of the workflow it runs"
	}
	return "func(ctx context.Context, in In, parents...) (T, error) or error"
}

// signatureWorkflow checks the context and input parameters shared by
// steps, sleeps and onfailure funcs and returns the workflow the func
// belongs to, or nil, and whether both parameters are in place.
func (a *analyzer) signatureWorkflow(f *found, fn *types.Func, sig *types.Signature) (*Workflow, bool) {
	params := sig.Params()
	name := fn.Name()
	ok := true
	if sig.Variadic() {
		last := params.At(params.Len() - 1)
		a.errorf(last.Pos(), token.NoPos, Variadic, "%s is variadic: a %s cannot take ...%s", name, f.dir.Name, a.typeString(last.Type().(*types.Slice).Elem()))
	}
	if params.Len() == 0 {
		a.errorf(f.fn.Name.Pos(), token.NoPos, BadContext, "%s takes no parameters: a %s is %s", name, f.dir.Name, shape(f.dir.Name))
		return nil, false
	}
	first := params.At(0)
	if !isContext(first.Type()) {
		if w := a.workflowFor(first.Type()); w != nil {
			a.errorf(first.Pos(), token.NoPos, BadContext, "first parameter of %s must be context.Context, with the workflow input %s second", name, w.TypeName)
			return w, false
		}
		ok = false
		a.errorf(first.Pos(), token.NoPos, BadContext, "first parameter of %s must be context.Context, not %s", name, a.typeString(first.Type()))
	}
	if params.Len() < 2 {
		msg := fmt.Sprintf("%s has no workflow input parameter: a %s is %s", name, f.dir.Name, shape(f.dir.Name))
		if len(a.workflows) == 1 {
			msg += fmt.Sprintf("; add in %s after the context", a.workflows[0].TypeName)
		}
		a.errorf(f.fn.Name.Pos(), token.NoPos, UnknownWorkflow, "%s", msg)
		return nil, false
	}
	in := params.At(1)
	if w := a.workflowFor(in.Type()); w != nil {
		return w, ok
	}
	for _, t := range a.aliasTargets {
		if types.Identical(t, in.Type()) {
			return nil, false // the alias's error says what to do
		}
	}
	msg := fmt.Sprintf("second parameter of %s has type %s, which is not a //dag:workflow type of this package", name, a.typeString(in.Type()))
	if p, ok := in.Type().(*types.Pointer); ok && a.workflowFor(p.Elem()) != nil {
		msg += fmt.Sprintf(": take %s, not a pointer", a.typeString(p.Elem()))
	} else if len(a.workflows) == 0 {
		msg += ": mark the input type with //dag:workflow"
	} else {
		msg += " (workflows: " + strings.Join(a.workflowNames(), ", ") + ")"
	}
	a.errorf(in.Pos(), token.NoPos, UnknownWorkflow, "%s", msg)
	return nil, false
}

func (a *analyzer) addStep(f *found) {
	fn, _ := a.pkg.TypesInfo.Defs[f.fn.Name].(*types.Func)
	if fn == nil {
		return
	}
	sig := fn.Type().(*types.Signature)
	s := &Step{
		Func: fn.Name(),
		Name: a.storedName(f, fn.Name()),
		Pos:  a.position(f.fn.Name.Pos()),
		Sig:  sig,
	}
	switch f.dir.Name {
	case dirSleep:
		s.Kind = KindSleep
	case dirChild:
		s.Kind = KindChild
	}
	a.funcs[fn] = s
	if ar, ok := f.args["after"]; ok {
		a.afters[s] = ar
	}
	if ar, ok := f.args["skip"]; ok {
		a.skips[s] = ar
	}
	if f.dupKeys["after"] {
		// Its parents are unknown: binding its parameters would only
		// blame parents missing from the first after= that are in another.
		a.unresolved[s] = true
	}
	a.readPolicy(f, s)
	a.readEach(f, s)
	w, shaped := a.signatureWorkflow(f, fn, sig)
	results := a.checkResults
	if s.Kind == KindChild {
		results = a.checkChildResults
	}
	s.valid = results(f, s) && shaped && !sig.Variadic()
	if s.Kind == KindStep {
		a.readStepRateLimit(f, s, w)
	}
	if w == nil {
		return
	}
	a.wfOf[s] = w
	w.Steps = append(w.Steps, s)
}

// readPolicy reads retry=, backoff=, maxbackoff= and timeout=.
func (a *analyzer) readPolicy(f *found, s *Step) {
	if ar, ok := f.args["retry"]; ok {
		n, err := strconv.Atoi(ar.Value)
		if err != nil || n < 0 {
			a.errorf(ar.ValuePos, ar.End, MalformedDirective, "retry=%s: want a number of retries, such as retry=3", ar.Value)
		}
		s.MaxRetries = n
	}
	a.readDuration(f, "backoff", "1s", "retries without delay", &s.Backoff)
	a.readDuration(f, "maxbackoff", "1s", "no cap on the delay", &s.MaxBackoff)
	a.readDuration(f, "timeout", "1s", "the engine's default", &s.Timeout)
	if s.MaxBackoff > 0 && s.MaxBackoff < s.Backoff {
		ar := f.args["maxbackoff"]
		a.errorf(ar.ValuePos, ar.End, MalformedDirective, "maxbackoff=%s is less than backoff=%s", s.MaxBackoff, s.Backoff)
	}
}

// checkResults checks a step's or sleep's results and sets its Output.
func (a *analyzer) checkResults(f *found, s *Step) bool {
	res := s.Sig.Results()
	pos := f.fn.Name.Pos()
	if res.Len() > 0 {
		pos = res.At(0).Pos()
	}
	got := a.typeString(res)
	if s.Kind == KindSleep {
		if res.Len() == 2 && isError(res.At(1).Type()) {
			switch {
			case isNamed(res.At(0).Type(), "time", "Duration"):
				return true
			case isNamed(res.At(0).Type(), "time", "Time"):
				s.SleepUntil = true
				return true
			}
		}
		a.errorf(pos, token.NoPos, BadSleep, "sleep %s must return (time.Duration, error) or (time.Time, error), not %s", s.Func, got)
		return false
	}
	switch {
	case res.Len() == 1 && isError(res.At(0).Type()):
		return true
	case res.Len() == 2 && isError(res.At(1).Type()):
		s.Output = res.At(0).Type()
		if isError(s.Output) {
			a.errorf(pos, token.NoPos, BadResults, "step %s returns (error, error): return (T, error) or error", s.Func)
			return false
		}
		if why := unencodable(s.Output, a.typeString); why != "" {
			a.errorf(pos, token.NoPos, Unencodable, "output of step %s cannot be stored as JSON: %s", s.Func, why)
		} else {
			a.checkLostFields(s.Output, pos, "output of step "+s.Func, "the steps after "+s.Func+" and the run's result get")
		}
		return true
	case res.Len() == 1:
		a.errorf(pos, token.NoPos, BadResults, "step %s must return (T, error) or error, not %s: add an error result", s.Func, got)
	default:
		a.errorf(pos, token.NoPos, BadResults, "step %s must return (T, error) or error, not %s", s.Func, got)
	}
	return false
}

func (a *analyzer) addOnFailure(f *found) {
	fn, _ := a.pkg.TypesInfo.Defs[f.fn.Name].(*types.Func)
	if fn == nil {
		return
	}
	sig := fn.Type().(*types.Signature)
	w, _ := a.signatureWorkflow(f, fn, sig)
	params, res := sig.Params(), sig.Results()
	ok := params.Len() == 3 && isNamed(params.At(2).Type(), DagPkgPath, "Failure") && res.Len() == 1 && isError(res.At(0).Type())
	if !ok {
		a.errorf(f.fn.Name.Pos(), token.NoPos, BadOnFailure, "onfailure %s must be %s, not %s", fn.Name(), shape(dirOnFailure), a.typeString(sig))
	}
	if w == nil {
		return
	}
	pos := a.position(f.fn.Name.Pos())
	if w.OnFailure != "" {
		a.errorAt(pos, DuplicateOnFailure, fmt.Sprintf("workflow %s already has onfailure func %s", w.TypeName, w.OnFailure),
			Related{Pos: w.OnFailurePos, Message: "first onfailure " + w.OnFailure})
		return
	}
	w.OnFailure, w.OnFailurePos, w.OnFailureSig = fn.Name(), pos, sig
}
