package analysis

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

// Child steps: //dag:child on a func (ctx, In, parents...) (ChildIn,
// error) runs the workflow whose input type is ChildIn, in this package
// or another, and completes with that workflow's result: the output of
// the step its //dag:workflow names with result=. Its children read that
// value (or, with each=, the slice of the elements' results) as they read
// any parent's output.

// checkChildResults checks a child step's results and keeps the type it
// returns, the input of the workflow it runs.
func (a *analyzer) checkChildResults(f *found, s *Step) bool {
	res := s.Sig.Results()
	pos := f.fn.Name.Pos()
	if res.Len() > 0 {
		pos = res.At(0).Pos()
	}
	switch {
	case res.Len() == 2 && isError(res.At(1).Type()) && !isError(res.At(0).Type()):
		s.childIn = res.At(0).Type()
		return true
	case res.Len() == 1 && isError(res.At(0).Type()):
		a.errorf(pos, token.NoPos, BadChild, "child step %s returns only error: a //dag:child func returns the input of the workflow it runs, as (In, error); make %s a //dag:step to run code without a child run", s.Func, s.Func)
	default:
		a.errorf(pos, token.NoPos, BadChild, "child step %s must return (In, error), the input of the workflow it runs, not %s", s.Func, a.typeString(s.Sig.Results()))
	}
	return false
}

// resolveResults resolves result= of every workflow to one of its steps.
// A step that gives no value is reported here, except a child step, whose
// value is known only once its child is (childOutputs).
func (a *analyzer) resolveResults() {
	for _, w := range a.workflows {
		ar, ok := a.results[w]
		if !ok {
			continue
		}
		name := ar.Value
		s, obj := a.node(name, w)
		if s != nil && a.wfOf[s] != w {
			if a.wfOf[s] != nil {
				a.errorf(ar.ValuePos, ar.End, UnknownResult, "result=%s of workflow %s names %s of workflow %s: result= names a step of %s", name, w.TypeName, a.nodeWhat(s), a.wfOf[s].TypeName, w.TypeName)
			}
			continue
		}
		if s == nil {
			msg := fmt.Sprintf("unknown step %s in result= of workflow %s", name, w.TypeName)
			switch {
			case obj != nil && obj.Name() == w.OnFailure:
				msg = fmt.Sprintf("result=%s of workflow %s names its onfailure func, which gives no value: name the step whose output is the workflow's result", name, w.TypeName)
			case obj != nil:
				if _, isFunc := obj.(*types.Func); isFunc {
					msg = fmt.Sprintf("result=%s of workflow %s names a func without //dag:step: mark %s //dag:step, or name another step", name, w.TypeName, name)
				} else {
					msg = fmt.Sprintf("result=%s of workflow %s names %s, which is not a step of it", name, w.TypeName, name)
				}
			default:
				if hint := didYouMean(name, a.stepFuncs(w)); hint != "" {
					msg += hint
				} else {
					for _, other := range w.Steps {
						if other.Name == name && other.Kind != KindSignal {
							msg += fmt.Sprintf(": result= takes func names; step %q is func %s", other.Name, other.Func)
							break
						}
					}
				}
			}
			a.errorf(ar.ValuePos, ar.End, UnknownResult, "%s", msg)
			continue
		}
		switch {
		case s.Kind == KindSleep:
			a.errorf(ar.ValuePos, ar.End, ResultNoValue, "result=%s of workflow %s names sleep %s, which gives no value: name a step that returns (T, error)", name, w.TypeName, s.Func)
			continue
		case s.Kind == KindStep && s.valid && s.Output == nil:
			a.errorf(ar.ValuePos, ar.End, ResultNoValue, "result=%s of workflow %s names step %s, which returns only error: make %s return (T, error), or name another step", name, w.TypeName, s.Func, s.Func)
			continue
		}
		w.Result = s
		a.resultPos[w] = ar
	}
}

// resolveChildren finds the workflow each child step runs.
func (a *analyzer) resolveChildren() {
	for _, w := range a.workflows {
		for _, s := range w.Steps {
			if s.Kind != KindChild || s.childIn == nil {
				continue
			}
			a.resolveChild(s)
		}
	}
}

func (a *analyzer) resolveChild(s *Step) {
	t := s.childIn
	at := a.position(s.Sig.Results().At(0).Pos())
	if !at.IsValid() {
		at = s.Pos
	}
	if w := a.workflowFor(t); w != nil {
		s.Child = &Child{Input: w.Input, Workflow: w.Name, TypeName: w.TypeName, Local: w}
		return
	}
	named, _ := types.Unalias(t).(*types.Named)
	if named != nil && named.Obj().Pkg() != nil && named.Obj().Pkg() != a.pkg.Types && named.TypeArgs().Len() == 0 {
		fw, why := a.foreignWorkflow(named)
		if fw != nil {
			s.Child = &Child{Input: t, Workflow: fw.name, TypeName: named.Obj().Name(), Result: fw.result}
			s.Output = fw.output
			s.childForeignSkippable = fw.skippable
			return
		}
		if why != "" {
			s.valid = false
			a.errorAt(at, NotAWorkflow, fmt.Sprintf("child step %s runs workflow %s of package %s, but %s", s.Func, named.Obj().Name(), named.Obj().Pkg().Path(), why))
			return
		}
	}
	s.valid = false
	msg := fmt.Sprintf("child step %s returns %s, which is not the input of a workflow", s.Func, a.typeString(t))
	switch p, _ := t.(*types.Pointer); {
	case p != nil && a.workflowFor(p.Elem()) != nil:
		msg += fmt.Sprintf(": return %s, not a pointer", a.typeString(p.Elem()))
	case named != nil && named.Obj().Pkg() != nil && named.Obj().Pkg() != a.pkg.Types:
		msg += fmt.Sprintf(": mark %s //dag:workflow in package %s, or make %s a //dag:step", named.Obj().Name(), named.Obj().Pkg().Path(), s.Func)
	default:
		msg += fmt.Sprintf(": mark %s //dag:workflow, or make %s a //dag:step", a.typeString(t), s.Func)
	}
	a.errorAt(at, NotAWorkflow, msg)
}

// checkWorkflowCycles reports workflows that run themselves through child
// steps, directly or through others, once per cycle, at the child step of
// the cycle's first workflow in source order. Child workflows in other
// packages cannot lead back here: that would be an import cycle.
func (a *analyzer) checkWorkflowCycles() {
	type hop struct {
		from *Workflow
		step *Step
	}
	reported := map[*Workflow]bool{}
	for _, start := range a.workflows {
		if reported[start] {
			continue
		}
		prev := map[*Workflow]hop{}
		queue := []*Workflow{start}
		seen := map[*Workflow]bool{start: true}
		var last hop
		found := false
		for len(queue) > 0 && !found {
			w := queue[0]
			queue = queue[1:]
			for _, s := range w.Steps {
				if s.Kind != KindChild || s.Child == nil || s.Child.Local == nil {
					continue
				}
				c := s.Child.Local
				if c == start {
					last, found = hop{w, s}, true
					break
				}
				if !seen[c] {
					seen[c] = true
					prev[c] = hop{w, s}
					queue = append(queue, c)
				}
			}
		}
		if !found {
			continue
		}
		path := []hop{last}
		for cur := last.from; cur != start; cur = prev[cur].from {
			path = append(path, prev[cur])
		}
		slices.Reverse(path)
		var b strings.Builder
		b.WriteString("workflow cycle: " + start.TypeName)
		var related []Related
		for i, h := range path {
			to := h.step.Child.Local
			fmt.Fprintf(&b, " runs %s (step %s)", to.TypeName, h.step.Func)
			reported[h.from] = true
			h.step.valid = false
			if i > 0 {
				related = append(related, Related{Pos: h.step.Pos, Message: fmt.Sprintf("%s runs %s in child step %s", h.from.TypeName, to.TypeName, h.step.Func)})
			}
		}
		b.WriteString(": a workflow cannot run itself, directly or through its children; make one of these a //dag:step, or run another workflow")
		a.errorAt(path[0].step.Pos, WorkflowCycle, b.String(), related...)
	}
}

// childOutputs sets the Output of every child step of a workflow in this
// package to its child's result, as the child's result step gives it to
// its children, and reports result= naming a child step without one.
func (a *analyzer) childOutputs() {
	state := map[*Step]int{}
	const (
		visiting = 1
		done     = 2
	)
	var visit func(s *Step) bool
	visit = func(s *Step) bool {
		switch state[s] {
		case visiting:
			return false
		case done:
			return s.valid
		}
		state[s] = visiting
		defer func() { state[s] = done }()
		if s.Child == nil || s.Child.Local == nil {
			return s.valid
		}
		r := s.Child.Local.Result
		if r == nil {
			return s.valid
		}
		s.Child.Result = r.Name
		if r.Kind == KindChild && !visit(r) {
			s.valid = false
			return false
		}
		if !r.valid && r.Kind != KindSignal {
			s.valid = false
			return false
		}
		s.Output = r.Output
		if _, mapped := a.eaches[r]; mapped && r.Output != nil {
			s.Output = types.NewSlice(r.Output)
		}
		return s.valid
	}
	for _, w := range a.workflows {
		for _, s := range w.Steps {
			if s.Kind == KindChild {
				visit(s)
			}
		}
	}
	for _, w := range a.workflows {
		r := w.Result
		if r == nil || r.Kind != KindChild || !r.valid || r.Output != nil || r.Child == nil {
			continue
		}
		ar := a.resultPos[w]
		a.errorf(ar.ValuePos, ar.End, ResultNoValue, "result=%s of workflow %s names child step %s, which gives no value: its workflow %s has no result=; give %s a result=, or name another step",
			ar.Value, w.TypeName, r.Func, r.Child.TypeName, r.Child.TypeName)
		w.Result = nil
	}
}
