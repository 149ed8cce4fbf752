// This file holds the names of the identifiers dagen generates and the
// checks that they collide with nothing. Package gen uses them to emit
// code, but they stay here: the analysis needs them to report a
// declaration or a node that a generated name would clash with before any
// code is written, and names computed in two places would drift apart.

package analysis

import (
	"fmt"
	"go/token"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

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
	sendTx := map[string]*Step{} // Send<X>Tx methods, by name
	for _, s := range w.Steps {
		if s.Kind == KindSignal {
			sendTx[SendTxMethod(s)] = s
		}
	}
	for _, s := range w.Steps {
		if s.Kind != KindSignal {
			continue
		}
		if m := SendMethod(s); slices.Contains(handleMethods, m) {
			a.errorAt(s.Pos, NameCollision, fmt.Sprintf("%s would generate method %s, which %sWorkflow has already: %s",
				a.nodeWhat(s), m, GoName(w), a.renameFix(s)))
		} else if other := sendTx[m]; other != nil {
			// A wait X and a wait XTx: Send<X>Tx is X's in-transaction
			// Send and XTx's Send.
			a.errorAt(s.Pos, NameCollision, fmt.Sprintf("%s and %s would both generate method %s: %s",
				a.nodeWhat(other), a.nodeWhat(s), m, a.renameFix(other, s)))
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

// SendMethod returns the name of the method of the typed workflow handle
// that sends signal wait s its payload: Send followed by [Step.Ident],
// upper-cased.
func SendMethod(s *Step) string { return "Send" + exported(s.Ident()) }

// SendTxMethod returns the name of the method of the typed workflow
// handle that sends signal wait s its payload in the caller's
// transaction: SendMethod followed by Tx.
func SendTxMethod(s *Step) string { return SendMethod(s) + "Tx" }

// handleMethods are the methods every typed workflow handle has. Send
// methods start with Send, so none of them can be one of these; the
// check of generated names looks anyway, in case a method is added.
var handleMethods = []string{"Run", "Start", "StartTx", "Get", "CreateSchedule"}
