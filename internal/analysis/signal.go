package analysis

import (
	"cmp"
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

// Signal waits: //dag:signal on a type makes a node of the graph that
// waits, once its after= parents are resolved, for a signal whose payload
// is a value of that type (engine.KindSignal). Its output, as its
// children, their skip predicates and the run's result see it, is the
// payload, so children take it as T or dag.Maybe[T] like any parent's
// output, and list it in after= by its stored name (the type's name
// unless name=). timeout= ends the wait: the wait is then skipped, which
// makes it a source of skips like a skip predicate.
//
// A signal wait belongs to the workflow of its after= parents, which may
// be signal waits themselves; one without after= waits from the start of
// a run of the package's only workflow.

// addSignal reads a //dag:signal type. Its workflow is found once every
// step is known, by placeSignals.
func (a *analyzer) addSignal(f *found) {
	obj, _ := a.pkg.TypesInfo.Defs[f.spec.Name].(*types.TypeName)
	if obj == nil {
		return
	}
	name := a.storedName(f, obj.Name())
	s := &Step{
		Func:     name,
		Name:     name,
		Kind:     KindSignal,
		Pos:      a.position(f.spec.Name.Pos()),
		Output:   obj.Type(),
		TypeName: obj.Name(),
		valid:    true,
	}
	if why := unencodable(s.Output, a.typeString); why != "" {
		a.errorAt(s.Pos, Unencodable, fmt.Sprintf("payload %s of signal %s cannot be stored as JSON: %s", obj.Name(), s.Name, why))
	} else {
		a.checkLostFields(s.Output, f.spec.Name.Pos(), "payload of signal "+s.Name, "the steps after "+s.Name+" and the run's result get")
	}
	a.readDuration(f, "timeout", "72h", "a wait without end", &s.SignalTimeout)
	if ar, ok := f.args["after"]; ok {
		a.afters[s] = ar
	}
	if f.dupKeys["after"] {
		a.unresolved[s] = true
	}
	a.signals = append(a.signals, s)
}

// node returns the step, sleep or signal wait that an after= name names:
// a func with //dag:step or //dag:sleep, or else a signal wait by its
// stored name, one of w first when w is not nil. When there is none, it
// returns the package-level object of that name, if any, to say what the
// name is instead.
func (a *analyzer) node(name string, w *Workflow) (*Step, types.Object) {
	obj := a.pkg.Types.Scope().Lookup(name)
	if fn, ok := obj.(*types.Func); ok && a.funcs[fn] != nil {
		return a.funcs[fn], obj
	}
	var found *Step
	for _, s := range a.signals {
		if s.Name != name {
			continue
		}
		if w == nil || a.wfOf[s] == w {
			return s, obj
		}
		if found == nil {
			found = s
		}
	}
	return found, obj
}

// placeSignals puts each signal wait in the workflow of its after=
// parents, or in the package's only workflow when it has none, and
// reports those it cannot place. A wait whose parents are in two
// workflows goes to the first one's: resolveParents then reports the
// other as a parent of another workflow.
func (a *analyzer) placeSignals() {
	if len(a.signals) == 0 {
		return
	}
	a.placedBy = map[*Step]*Step{}
	// Waits may follow waits: place them until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, s := range a.signals {
			ar, ok := a.afters[s]
			if !ok || a.wfOf[s] != nil {
				continue
			}
			for _, it := range ar.items() {
				if p, _ := a.node(it.Text, nil); p != nil && p != s && a.wfOf[p] != nil {
					a.wfOf[s], a.placedBy[s] = a.wfOf[p], p
					changed = true
					break
				}
			}
		}
	}
	touched := map[*Workflow]bool{}
	for _, s := range a.signals {
		w := a.wfOf[s]
		if w == nil {
			w = a.defaultWorkflow(s)
		}
		if w == nil {
			continue
		}
		a.wfOf[s] = w
		w.Steps = append(w.Steps, s)
		touched[w] = true
	}
	for _, w := range a.workflows {
		if touched[w] {
			slices.SortStableFunc(w.Steps, func(x, y *Step) int {
				return cmp.Or(strings.Compare(x.Pos.Filename, y.Pos.Filename), cmp.Compare(x.Pos.Offset, y.Pos.Offset))
			})
		}
	}
}

// defaultWorkflow returns the workflow of a signal wait that no parent
// placed: the package's only one, where resolveParents says what is
// wrong with its after=, if any. With several, it reports why it cannot
// tell, and returns nil.
func (a *analyzer) defaultWorkflow(s *Step) *Workflow {
	if len(a.workflows) == 1 {
		return a.workflows[0]
	}
	ar, hasAfter := a.afters[s]
	switch {
	case len(a.workflows) == 0:
		a.errorAt(s.Pos, UnknownWorkflow, fmt.Sprintf("signal %s belongs to no workflow: the package has no //dag:workflow type", s.Name))
	case !hasAfter:
		a.errorAt(s.Pos, UnknownWorkflow, fmt.Sprintf("signal %s has no after=, and the package has several workflows (%s): write after=<a step> to say which workflow waits for it",
			s.Name, strings.Join(a.workflowNames(), ", ")))
	default:
		// No name in after= is a node of a workflow: say what each
		// unknown one is. A name of a node without a workflow has its own
		// error already.
		for _, it := range ar.items() {
			if it.Text == "" {
				a.errorf(it.Pos, it.End, EmptyValue, "empty name in after= of %s", s.Func)
				continue
			}
			if p, obj := a.node(it.Text, nil); p == nil {
				a.unknownParent(nil, s, it, obj)
			}
		}
	}
	return nil
}

// signalIdents sets the identifiers generated names of w's signal waits
// are built from ([Step.Ident]): the name of the type //dag:signal is on,
// or the stored name for waits whose payload type another wait of w
// carries too (through an alias: type FinanceApproval = Approval), which
// must then be an identifier.
func (a *analyzer) signalIdents(w *Workflow) {
	var waits []*Step
	for _, s := range w.Steps {
		if s.Kind == KindSignal {
			waits = append(waits, s)
		}
	}
	for _, s := range waits {
		var others []string
		for _, o := range waits {
			if o != s && types.Identical(o.Output, s.Output) {
				others = append(others, fmt.Sprintf("%q", o.Name))
			}
		}
		if len(others) == 0 {
			s.signalIdent = s.TypeName
			continue
		}
		s.signalIdent = s.Name
		if !token.IsIdentifier(s.Name) {
			a.errorAt(s.Pos, BadName, fmt.Sprintf("signal %q carries type %s, as %s of workflow %s does, so its generated names (its Send method, its field of %sResult) are built from its stored name, and %q is not a Go identifier: give it a name= that is one",
				s.Name, a.typeString(types.Unalias(s.Output)), joinAnd(others), w.TypeName, GoName(w), s.Name))
		}
	}
}
