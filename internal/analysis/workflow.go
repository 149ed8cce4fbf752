package analysis

import (
	"fmt"
	"go/token"
	"go/types"
)

func (a *analyzer) addWorkflow(f *found) {
	obj, _ := a.pkg.TypesInfo.Defs[f.spec.Name].(*types.TypeName)
	if obj == nil {
		return
	}
	w := &Workflow{
		Name:     a.storedName(f, obj.Name()),
		TypeName: obj.Name(),
		Input:    obj.Type(),
		Pos:      a.position(f.spec.Name.Pos()),
	}
	for _, other := range a.workflows {
		if other.Name == w.Name {
			a.errorAt(w.Pos, DuplicateName, fmt.Sprintf("workflow name %q is already used by %s", w.Name, other.TypeName),
				Related{Pos: other.Pos, Message: "other workflow " + other.TypeName})
		}
	}
	if why := unencodable(w.Input, a.typeString); why != "" {
		a.errorAt(w.Pos, Unencodable, fmt.Sprintf("workflow input %s cannot be stored as JSON: %s", w.TypeName, why))
	} else {
		a.checkLostFields(w.Input, f.spec.Name.Pos(), "workflow input "+w.TypeName, "every step gets")
	}
	if ar, ok := f.args["result"]; ok {
		a.results[w] = ar
	}
	w.Key = a.readFieldKey(f, w, idempotencyKey)
	a.readFlow(f, w)
	a.readPriority(f, w)
	a.workflows = append(a.workflows, w)
	a.wfTypes = append(a.wfTypes, obj)
}

// workflowFor returns the workflow whose input type is t, or nil.
func (a *analyzer) workflowFor(t types.Type) *Workflow {
	for i, tn := range a.wfTypes {
		if types.Identical(t, tn.Type()) {
			return a.workflows[i]
		}
	}
	return nil
}

func (a *analyzer) workflowNames() []string {
	names := make([]string, len(a.workflows))
	for i, w := range a.workflows {
		names[i] = w.TypeName
	}
	return names
}

// checkWorkflow resolves parents and predicates and checks the graph of one
// workflow.
func (a *analyzer) checkWorkflow(w *Workflow) {
	if len(w.Steps) == 0 {
		a.errorAt(w.Pos, NoSteps, fmt.Sprintf("workflow %s has no steps: a step takes (ctx context.Context, in %s, …)", w.TypeName, w.TypeName))
		return
	}
	names := map[string]*Step{}
	for _, s := range w.Steps {
		if other := names[s.Name]; other != nil {
			a.duplicateName(w, s, other)
			continue
		}
		names[s.Name] = s
	}
	a.signalNames(w)
	a.signalIdents(w)
	for _, s := range w.Steps {
		a.resolveParents(w, s)
	}
	for _, s := range w.Steps {
		a.resolveEach(w, s)
	}
	for _, s := range w.Steps {
		a.checkEachSlice(s)
	}
	a.checkCycles(w)
	for _, s := range w.Steps {
		a.bindParams(w, s)
	}
}

// finishWorkflow checks what needs to know which steps of every workflow
// can be skipped: needless dag.Maybe parameters and skip predicates.
func (a *analyzer) finishWorkflow(w *Workflow) {
	for _, s := range w.Steps {
		for _, e := range s.Parents {
			if !e.Optional || e.Parent.Skippable {
				continue
			}
			p := s.Sig.Params().At(e.Param)
			if out := e.Parent.ResultType(); types.Identical(unMaybe(p.Type()), out) {
				a.report(p.Pos(), token.NoPos, NeedlessMaybe, Warning,
					fmt.Sprintf("%s takes dag.Maybe[%s] for %s, which is never skipped: take %s instead",
						s.Func, a.typeString(out), e.Parent.Func, a.typeString(out)))
			}
		}
		a.resolvePredicates(w, s)
	}
}

// duplicateName reports s, whose stored name other has already.
func (a *analyzer) duplicateName(w *Workflow, s, other *Step) {
	if s.Kind != KindSignal && other.Kind != KindSignal {
		a.errorAt(s.Pos, DuplicateName, fmt.Sprintf("step name %q of %s is already used by %s in workflow %s", s.Name, s.Func, other.Func, w.TypeName),
			Related{Pos: other.Pos, Message: "other step " + other.Func})
		return
	}
	fix := "give the signal another name="
	if s.Kind == KindSignal && other.Kind == KindSignal {
		fix = "give one of them another name="
	}
	a.errorAt(s.Pos, DuplicateName, fmt.Sprintf("%s has stored name %q, which %s has already in workflow %s: %s", a.nodeWhat(s), s.Name, a.nodeWhat(other), w.TypeName, fix),
		Related{Pos: other.Pos, Message: "other " + a.nodeWhat(other)})
}

// nodeWhat names a node for messages: "step Charge", "sleep Wait",
// "signal Approval", "signal Approve (type Approval)".
func (a *analyzer) nodeWhat(s *Step) string {
	switch s.Kind {
	case KindSleep:
		return "sleep " + s.Func
	case KindChild:
		return "child step " + s.Func
	case KindSignal:
		if s.TypeName != s.Name {
			return fmt.Sprintf("signal %s (type %s)", s.Name, s.TypeName)
		}
		return "signal " + s.Name
	}
	return "step " + s.Func
}

// signalNames reports the signal waits of w named like the func of a
// step or a sleep of the package: after= names funcs first, so it could
// never name such a wait. A wait named like a node of w, stored name and
// func alike, is reported as a duplicate already.
func (a *analyzer) signalNames(w *Workflow) {
	for _, s := range w.Steps {
		if s.Kind != KindSignal {
			continue
		}
		p, _ := a.node(s.Name, w)
		if p == nil || p.Kind == KindSignal || p.Name == s.Name && a.wfOf[p] == w {
			continue
		}
		kind := "step"
		if p.Kind == KindSleep {
			kind = "sleep"
		}
		a.errorAt(s.Pos, DuplicateName, fmt.Sprintf("%s is named like the func of %s %s: after=%s would name the %s; give the signal another name=",
			a.nodeWhat(s), kind, p.Func, s.Name, kind),
			Related{Pos: p.Pos, Message: "func " + p.Func})
	}
}

func (a *analyzer) stepFuncs(w *Workflow) []string {
	out := make([]string, len(w.Steps))
	for i, s := range w.Steps {
		out[i] = s.Func
	}
	return out
}
