package console

import (
	"cmp"
	"fmt"
	"slices"
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
}

// edge is a parent edge as drawn, from the parent's bottom to the
// child's top.
type edge struct {
	Path  string
	Class string
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
// dag.Maybe: they are drawn dashed, as dagen graph draws them.
func layout(tasks []store.Task, optional map[[2]string]bool) drawing {
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
	layers := map[int][]*node{}
	for _, n := range nodes {
		layers[n.Layer] = append(layers[n.Layer], n)
	}
	// Order within layers by the mean position of parents (barycenter),
	// top down, keeping creation order among equals.
	pos := map[*node]float64{}
	for l := 0; l <= maxLayer+1; l++ {
		ls := layers[l]
		for i, n := range ls {
			pos[n] = float64(i)
			var sum float64
			var k int
			for _, p := range n.Task.Parents {
				if pn := index[p]; pn != nil {
					sum += pos[pn]
					k++
				}
			}
			if k > 0 {
				pos[n] = sum / float64(k)
			}
		}
		slices.SortStableFunc(ls, func(a, b *node) int { return cmp.Compare(pos[a], pos[b]) })
		for i, n := range ls {
			pos[n] = float64(i)
		}
	}
	width := 0
	for l := 0; l <= maxLayer+1; l++ {
		width = max(width, len(layers[l]))
	}
	d := drawing{Nodes: nodes, Width: 2*margin + max(width, 1)*(nodeW+gapX) - gapX}
	for l := 0; l <= maxLayer+1; l++ {
		ls := layers[l]
		// Centre each layer.
		off := (d.Width - 2*margin - (len(ls)*(nodeW+gapX) - gapX)) / 2
		for i, n := range ls {
			n.X = margin + off + i*(nodeW+gapX)
			n.Y = margin + l*(nodeH+gapY)
		}
		if len(ls) > 0 {
			d.Height = margin + l*(nodeH+gapY) + nodeH + margin
		}
	}
	for _, n := range nodes {
		for _, p := range n.Task.Parents {
			pn := index[p]
			if pn == nil {
				continue
			}
			x1, y1 := pn.X+nodeW/2, pn.Y+nodeH
			x2, y2 := n.X+nodeW/2, n.Y
			my := (y1 + y2) / 2
			class := "edge " + edgeClass(pn.Task.Status)
			if optional[[2]string{n.Task.Name, p}] {
				class += " optional"
			}
			d.Edges = append(d.Edges, edge{
				Path:  fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y1, x1, my, x2, my, x2, y2),
				Class: class,
			})
		}
	}
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
