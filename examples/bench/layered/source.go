// Package layered is the layered workflow of dagen's benchmark workload
// wide10k (examples/bench): the annotated Go source of one workflow of
// Layers × Width steps, each step after a few steps of the layer above,
// and the drain a program built from its generated wiring runs. The
// workflow is not committed in generated form: the benchmark writes its
// source into a throwaway module, runs the dagen generator on it, builds
// a program that calls [Main] and runs it, so generating and building a
// workflow that size are measured as a user meets them.
package layered

import (
	"bytes"
	"fmt"
	"slices"
)

// Workflow is the workflow's name, the name of its input type.
const Workflow = "Wide"

// Shape is a layered workflow's size: Layers layers of Width steps.
type Shape struct {
	Layers, Width int
}

// Steps returns how many steps the workflow has.
func (s Shape) Steps() int { return s.Layers * s.Width }

// Parents returns the indexes, in the layer above, of the parents of step
// i of a layer below the first: the step above it, its neighbour to the
// right, and, for every other step, the step half a layer away. Every step
// of a layer is a parent of two or three below, and the neighbours
// spread each root's reach a step a layer, so no step waits for a whole
// layer and no two layers form a simple chain.
func (s Shape) Parents(i int) []int {
	ps := []int{i, (i + 1) % s.Width}
	if i%2 == 0 {
		ps = append(ps, (i+s.Width/2)%s.Width)
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// Edges returns how many parent edges the workflow has.
func (s Shape) Edges() int {
	n := 0
	for i := range s.Width {
		n += len(s.Parents(i))
	}
	return n * max(0, s.Layers-1)
}

// StepName returns the name of step i of layer l (both from 0): L01S000
// is the first step of the first layer.
func StepName(l, i int) string { return fmt.Sprintf("L%02dS%03d", l+1, i) }

// Source returns the annotated Go source of package pkg holding the
// workflow: its input type Wide, and one no-op step function a step. The
// steps of the last layer return an int (the input's N), so the run has
// outputs; the others return only an error, as fan50's branches do, so no
// step reads a parent's output.
func Source(pkg string, s Shape) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `// Package %s holds the layered workflow %s: %d layers of %d steps.
package %s

import "context"

// %s is the input of workflow %s.
//
//dag:workflow
type %s struct {
	N int
}
`, pkg, Workflow, s.Layers, s.Width, pkg, Workflow, Workflow, Workflow)
	after := make([]byte, 0, 64)
	for l := range s.Layers {
		for i := range s.Width {
			b.WriteString("\n//dag:step")
			if l > 0 {
				after = append(after[:0], " after="...)
				for k, p := range s.Parents(i) {
					if k > 0 {
						after = append(after, ',')
					}
					after = append(after, StepName(l-1, p)...)
				}
				b.Write(after)
			}
			name := StepName(l, i)
			if l == s.Layers-1 {
				fmt.Fprintf(&b, "\nfunc %s(ctx context.Context, w %s) (int, error) { return w.N, nil }\n", name, Workflow)
			} else {
				fmt.Fprintf(&b, "\nfunc %s(ctx context.Context, w %s) error { return nil }\n", name, Workflow)
			}
		}
	}
	return b.Bytes()
}

// Program returns the source of a main package that drains one run of the
// workflow generated in package importPath (see [Main]).
func Program(importPath string) []byte {
	return fmt.Appendf(nil, `// Command drain runs one run of workflow %[2]s on Postgres and prints
// what the drain took, as one JSON line (see package layered).
package main

import (
	"os"

	"github.com/dagenhq/dagen/examples/bench/layered"

	flow %[1]q
)

func main() {
	os.Exit(layered.Main(os.Args[1:], flow.%[2]sDefinition(), flow.%[2]s{N: 1}))
}
`, importPath, Workflow)
}
