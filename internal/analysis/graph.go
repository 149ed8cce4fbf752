package analysis

import (
	"fmt"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

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

// computeSkippable marks the steps that can end SKIPPED, following the
// truth table of the engine: a step is skipped when a skip predicate holds,
// when a required parent is skipped, or when all its parents are skipped;
// a signal wait with timeout= is skipped when no signal came in time.
//
// A child step is skipped when the result step of its child workflow was.
func (a *analyzer) computeSkippable() {
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
		if c := s.Child; c != nil && c.Result != "" {
			if c.Local != nil && c.Local.Result != nil {
				skippable = skippable || visit(c.Local.Result)
			}
			skippable = skippable || s.childForeignSkippable
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
	for _, w := range a.workflows {
		for _, s := range w.Steps {
			visit(s)
		}
	}
}
