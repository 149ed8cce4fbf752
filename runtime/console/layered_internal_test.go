package console

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// TestLayoutUncrossesASwappedPair checks that the crossing reduction
// orders a layer by its parents: b's child is listed first, yet drawn
// under b, so no edges cross.
func TestLayoutUncrossesASwappedPair(t *testing.T) {
	tasks := []store.Task{
		{Name: "a", Status: store.TaskCompleted}, {Name: "b", Status: store.TaskCompleted},
		{Name: "under_b", Parents: []string{"b"}}, {Name: "under_a", Parents: []string{"a"}},
	}
	d := layout(tasks, nil, nil)
	x := map[string]int{}
	for _, n := range d.Nodes {
		x[n.Task.Name] = n.X
	}
	require.Less(t, x["a"], x["b"])
	require.Less(t, x["under_a"], x["under_b"], "children follow their parents' order")
	require.Equal(t, x["a"], x["under_a"], "a child right under its only parent")
}

// TestLayoutRoutesLongEdgesAroundNodes checks that an edge spanning
// layers passes through a placeholder beside the nodes between, not
// through them.
func TestLayoutRoutesLongEdgesAroundNodes(t *testing.T) {
	tasks := []store.Task{
		{Name: "root"}, {Name: "mid", Parents: []string{"root"}}, {Name: "end", Parents: []string{"mid", "root"}},
	}
	d := layout(tasks, nil, nil)
	require.Len(t, d.Edges, 3)
	var mid *node
	for _, n := range d.Nodes {
		if n.Task.Name == "mid" {
			mid = n
		}
	}
	var long edge
	for _, e := range d.Edges {
		if e.From == "root" && e.To == "end" {
			long = e
		}
	}
	// The path's straight run through mid's layer is at an x outside mid.
	var x, y1, y2 int
	_, err := fmt.Sscanf(long.Path[lastL(long.Path):], "L%d,%d", &x, &y2)
	require.NoError(t, err, long.Path)
	y1 = mid.Y
	require.Equal(t, mid.Y+nodeH, y2, "straight down through mid's layer")
	require.True(t, x < mid.X || x > mid.X+nodeW, "x %d beside mid [%d, %d] at y %d", x, mid.X, mid.X+nodeW, y1)
}

func lastL(path string) int {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == 'L' {
			return i
		}
	}
	return 0
}

// TestLayoutDenseGraph lays out a graph too dense to count crossings on
// (two layers of 100, every pair joined) without overlapping nodes.
func TestLayoutDenseGraph(t *testing.T) {
	var tasks []store.Task
	var tops []string
	for i := range 100 {
		tops = append(tops, fmt.Sprintf("t%d", i))
		tasks = append(tasks, store.Task{Name: tops[i]})
	}
	for i := range 100 {
		tasks = append(tasks, store.Task{Name: fmt.Sprintf("b%d", i), Parents: tops})
	}
	d := layout(tasks, nil, nil)
	require.Len(t, d.Edges, 10_000)
	seen := map[[2]int]bool{}
	for _, n := range d.Nodes {
		require.False(t, seen[[2]int{n.X, n.Y}], "two nodes at %d,%d", n.X, n.Y)
		seen[[2]int{n.X, n.Y}] = true
	}
}
