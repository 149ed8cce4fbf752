package gen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dagenhq/dagen/internal/analysis"
)

// Mermaid renders a workflow as a Mermaid flowchart, top to bottom. Edges
// point from a parent to its child; an optional parent (taken as
// dag.Maybe) is a dotted edge; a sleep is a rounded node; a signal wait
// is a parallelogram, [/…/], labelled "signal Approval (72h)" with its
// timeout; a mapped step (each=) is a subroutine node, [[…]], with a thick
// edge from the parent it maps; skip predicates, the map, retries and a
// rate limit are part of a node's label. Schedules are not drawn: they
// start runs, they are no part of one.
func Mermaid(w *analysis.Workflow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntitle: %s\n---\nflowchart TD\n", yamlScalar(w.Name))
	for _, s := range w.Steps {
		label := strings.ReplaceAll(strings.Join(nodeLabel(s), "<br/>"), `"`, "#quot;")
		switch {
		case s.Kind == analysis.KindSleep:
			fmt.Fprintf(&b, "    %s([\"%s\"])\n", mermaidID(s.Ident()), label)
		case s.Kind == analysis.KindSignal:
			fmt.Fprintf(&b, "    %s[/\"%s\"/]\n", mermaidID(s.Ident()), label)
		case s.Mapped():
			fmt.Fprintf(&b, "    %s[[\"%s\"]]\n", mermaidID(s.Ident()), label)
		default:
			fmt.Fprintf(&b, "    %s[\"%s\"]\n", mermaidID(s.Ident()), label)
		}
	}
	for _, s := range w.Steps {
		for _, e := range s.Parents {
			arrow := "-->"
			switch {
			case e == s.Each:
				arrow = "==>"
			case e.Optional:
				arrow = "-.->"
			}
			fmt.Fprintf(&b, "    %s %s %s\n", mermaidID(e.Parent.Ident()), arrow, mermaidID(s.Ident()))
		}
	}
	if w.OnFailure != "" {
		fmt.Fprintf(&b, "    %s{{\"%s<br/>onfailure\"}}\n", mermaidID(w.OnFailure), w.OnFailure)
	}
	return b.String()
}

// yamlScalar returns s as it can stand in Mermaid's YAML front matter:
// bare when it is a plain name, double-quoted otherwise (a stored name may
// hold a colon or a quote).
func yamlScalar(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) < 0
	if plain {
		return s
	}
	return strconv.Quote(s)
}

// mermaidID returns a node id for a node's Go identifier (a step's func
// name): the name itself, except that Mermaid reads "end" as a keyword in
// any case.
func mermaidID(name string) string {
	if strings.EqualFold(name, "end") {
		return name + "_"
	}
	return name
}

// DOT renders a workflow as a Graphviz digraph, with the same conventions
// as [Mermaid]: dashed edges for optional parents, rounded sleeps, signal
// waits as parallelograms, mapped steps as stacked boxes (box3d) with a
// bold edge from the parent they map.
func DOT(w *analysis.Workflow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n    rankdir=TB;\n    node [shape=box];\n", w.Name)
	for _, s := range w.Steps {
		attrs := []string{fmt.Sprintf("label=%q", strings.Join(nodeLabel(s), "\n"))}
		switch {
		case s.Kind == analysis.KindSleep:
			attrs = append(attrs, "shape=box", "style=rounded")
		case s.Kind == analysis.KindSignal:
			attrs = append(attrs, "shape=parallelogram")
		case s.Mapped():
			attrs = append(attrs, "shape=box3d")
		}
		fmt.Fprintf(&b, "    %q [%s];\n", s.Ident(), strings.Join(attrs, ", "))
	}
	for _, s := range w.Steps {
		for _, e := range s.Parents {
			from, to := e.Parent.Ident(), s.Ident()
			switch {
			case e == s.Each:
				fmt.Fprintf(&b, "    %q -> %q [style=bold];\n", from, to)
			case e.Optional:
				fmt.Fprintf(&b, "    %q -> %q [style=dashed];\n", from, to)
			default:
				fmt.Fprintf(&b, "    %q -> %q;\n", from, to)
			}
		}
	}
	if w.OnFailure != "" {
		fmt.Fprintf(&b, "    %q [label=%q, shape=hexagon];\n", w.OnFailure, w.OnFailure+"\nonfailure")
	}
	b.WriteString("}\n")
	return b.String()
}

// nodeLabel is a step's name followed by what is special about it. A
// signal wait's is "signal Approval (72h)", its stored name and timeout,
// followed by its payload type when that has another name.
func nodeLabel(s *analysis.Step) []string {
	if s.Kind == analysis.KindSignal {
		head := "signal " + s.Name
		if s.SignalTimeout > 0 {
			head += " (" + durationText(s.SignalTimeout) + ")"
		}
		lines := []string{head}
		if s.TypeName != s.Name {
			lines = append(lines, "type "+s.TypeName)
		}
		return lines
	}
	lines := []string{s.Func}
	if s.Name != s.Func {
		lines[0] += fmt.Sprintf(" (%s)", s.Name)
	}
	if s.Kind == analysis.KindSleep {
		lines = append(lines, "sleep")
	}
	if s.Kind == analysis.KindChild {
		lines = append(lines, "runs "+s.Child.Workflow)
	}
	if s.Mapped() {
		m := "each " + s.Each.Parent.Func
		if s.Limit > 0 {
			m += fmt.Sprintf(", limit %d", s.Limit)
		}
		lines = append(lines, m)
	}
	if len(s.Skip) > 0 {
		names := make([]string, len(s.Skip))
		for i, p := range s.Skip {
			names[i] = p.Func
		}
		lines = append(lines, "skip: "+strings.Join(names, ", "))
	}
	if s.MaxRetries > 0 {
		r := fmt.Sprintf("retry=%d", s.MaxRetries)
		if s.Backoff > 0 {
			r += fmt.Sprintf(" backoff=%s", s.Backoff)
		}
		lines = append(lines, r)
	}
	if rl := s.RateLimit; rl != nil {
		r := "ratelimit=" + rl.Limit.Name
		if rl.Units > 1 {
			r += fmt.Sprintf(" units=%d", rl.Units)
		}
		if rl.Key != nil {
			r += " per=" + rl.Key.Path
		}
		lines = append(lines, r)
	}
	return lines
}
