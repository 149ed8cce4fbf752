package analysis

import (
	"fmt"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"github.com/dagenhq/dagen/internal/textfmt"
)

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
		switch {
		case e.Parent.Kind == KindSleep:
			parts[i] = e.Parent.Func + " is a sleep"
		case e.Parent.Kind == KindChild && e.Parent.Child != nil:
			parts[i] = e.Parent.Func + " runs workflow " + e.Parent.Child.TypeName + ", which has no result="
		default:
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
