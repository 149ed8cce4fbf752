package console

import (
	"fmt"
	"strings"

	"github.com/dagenhq/dagen/runtime/store"
)

// Node sizes and gaps of the drawn DAG, in SVG user units.
const (
	nodeW, nodeH = 190, 44
	gapX, gapY   = 40, 56
	margin       = 16
)

// node is a step as drawn.
type node struct {
	Task     store.Task
	Label    string // name, and kind or progress
	Layer    int
	X, Y     int
	Class    string // its status, as a CSS class
	Progress string // "3 of 10" for a mapped step
	// Child is, for a child step that started one, the run its latest
	// attempt started: the node links to it.
	Child *store.ChildRun
}

// edge is a parent edge as drawn, from the parent's bottom to the
// child's top, through the layers between them.
type edge struct {
	Path     string
	Class    string
	From, To string // the parent's and the child's names
}

// drawing is a run's DAG laid out.
type drawing struct {
	Nodes         []*node
	Edges         []edge
	Width, Height int
}

// layout lays the steps of a run out: elements of mapped steps are folded
// into their step (its progress), the onfailure task is drawn only when it
// ran. optional holds the edges (child, parent) the child takes as a
// dag.Maybe: they are drawn dashed, as dagen graph draws them. children
// are the child runs by the task that started them, latest attempt first:
// a child step is labelled with its child's workflow and links to it.
func layout(tasks []store.Task, optional map[[2]string]bool, children map[string][]store.ChildRun) drawing {
	progress := map[string][2]int{}
	for _, t := range tasks {
		if t.Kind == store.KindMap && t.Elements > 0 {
			progress[t.Name] = [2]int{0, t.Elements}
		}
	}
	var nodes []*node
	index := map[string]*node{}
	for _, t := range tasks {
		if t.Kind == store.KindElement {
			if step, _, ok := store.ParseElement(t.Name); ok && t.Status == store.TaskCompleted {
				p := progress[step]
				p[0]++
				progress[step] = p
			}
			continue
		}
		if t.Kind == store.KindOnFailure && t.Status == store.TaskPending {
			continue
		}
		n := &node{Task: t, Label: t.Name, Class: statusClass(t.Status)}
		switch t.Kind {
		case store.KindSleep:
			n.Label += " · sleep"
		case store.KindSignal:
			n.Label += " · signal"
		case store.KindMap:
			n.Label += " · each"
		case store.KindChild:
			// The workflow it runs is known once it started a run: the
			// store keeps no other record of it (SignatureInfo.Child is
			// not recorded).
			if ks := children[t.Name]; len(ks) > 0 {
				n.Label += " · runs " + ks[0].Workflow
				n.Child = &ks[0]
			} else {
				n.Label += " · child"
			}
		case store.KindOnFailure:
			n.Label = "onfailure"
		}
		nodes = append(nodes, n)
		index[t.Name] = n
	}
	for _, n := range nodes {
		if p, ok := progress[n.Task.Name]; ok {
			n.Progress = fmt.Sprintf("%d of %d", p[0], p[1])
		}
	}
	// Layers: the longest path from a root. Tasks come in creation order,
	// which is not always topological, so iterate to a fixed point (a
	// DAG needs at most len(nodes) rounds).
	for range nodes {
		moved := false
		for _, n := range nodes {
			for _, p := range n.Task.Parents {
				if pn := index[p]; pn != nil && pn.Layer+1 > n.Layer {
					n.Layer, moved = pn.Layer+1, true
				}
			}
		}
		if !moved {
			break
		}
	}
	maxLayer := 0
	for _, n := range nodes {
		maxLayer = max(maxLayer, n.Layer)
	}
	if of := index[onFailureName]; of != nil {
		of.Layer = maxLayer + 1 // below the steps, beside nothing
	}
	var edges [][3]string
	for _, n := range nodes {
		for _, p := range n.Task.Parents {
			pn := index[p]
			if pn == nil {
				continue
			}
			class := "edge " + edgeClass(pn.Task.Status)
			if optional[[2]string{n.Task.Name, p}] {
				class += " optional"
			}
			edges = append(edges, [3]string{p, n.Task.Name, class})
		}
	}
	d := drawing{Nodes: nodes}
	d.Edges, d.Width, d.Height = placeLayered(nodes, edges)
	return d
}

const onFailureName = "@onfailure"

// statusClass is the CSS class of a status.
func statusClass(s store.TaskStatus) string { return "st-" + strings.ToLower(string(s)) }

func edgeClass(parent store.TaskStatus) string {
	if parent.Resolved() {
		return "done"
	}
	return "todo"
}
