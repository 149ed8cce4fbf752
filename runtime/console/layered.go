package console

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The layered drawing of a DAG (after Sugiyama et al.): nodes in layers,
// an edge that spans layers routed through a placeholder in each layer it
// crosses, the order within layers chosen by sweeps that reduce edge
// crossings, and x positions that pull each node towards its neighbours
// while keeping the order.

// Sweeps of the crossing reduction and rounds of the x placement.
const (
	orderSweeps = 12
	placeRounds = 12
	bendGap     = 14 // between a placeholder and its neighbours
	// maxCountedEdges bounds the graphs whose crossings are counted.
	maxCountedEdges = 3000
)

// slot is a node or a placeholder of a long edge in a layer.
type slot struct {
	n        *node // nil for a placeholder
	layer    int
	x        float64 // centre
	pos      int     // index in its layer
	up, down []*slot // neighbours in the layers above and below
}

func (s *slot) width() float64 {
	if s.n == nil {
		return 0
	}
	return nodeW
}

// link is an edge from a parent to a child, through its placeholders.
type link struct {
	from, to *slot
	via      []*slot
	class    string
	ends     [2]string // parent, child
}

// placeLayered sets the nodes' X and Y (their layers are set), returns
// the edges drawn, and the size of the drawing. edges are (parent, child,
// class) triples.
func placeLayered(nodes []*node, edges [][3]string) ([]edge, int, int) {
	slots := map[*node]*slot{}
	byName := map[string]*slot{}
	layers := [][]*slot{}
	add := func(s *slot) {
		for len(layers) <= s.layer {
			layers = append(layers, nil)
		}
		s.pos = len(layers[s.layer])
		layers[s.layer] = append(layers[s.layer], s)
	}
	for _, n := range nodes {
		s := &slot{n: n, layer: n.Layer}
		slots[n] = s
		byName[n.Task.Name] = s
		add(s)
	}
	var links []link
	for _, e := range edges {
		from, to := byName[e[0]], byName[e[1]]
		if from == nil || to == nil || to.layer <= from.layer {
			continue
		}
		l := link{from: from, to: to, class: e[2], ends: [2]string{e[0], e[1]}}
		prev := from
		for layer := from.layer + 1; layer < to.layer; layer++ {
			p := &slot{layer: layer}
			add(p)
			l.via = append(l.via, p)
			prev.down = append(prev.down, p)
			p.up = append(p.up, prev)
			prev = p
		}
		prev.down = append(prev.down, to)
		to.up = append(to.up, prev)
		links = append(links, l)
	}
	orderLayers(layers)
	placeX(layers)

	// Shift the drawing to the margin and size it.
	minX, maxX := math.Inf(1), math.Inf(-1)
	for _, ls := range layers {
		for _, s := range ls {
			minX = min(minX, s.x-s.width()/2)
			maxX = max(maxX, s.x+s.width()/2)
		}
	}
	if math.IsInf(minX, 1) {
		return nil, 2 * margin, 2 * margin
	}
	shift := margin - minX
	top := func(layer int) int { return margin + layer*(nodeH+gapY) }
	for _, n := range nodes {
		s := slots[n]
		n.X = int(math.Round(s.x + shift - nodeW/2))
		n.Y = top(n.Layer)
	}
	var out []edge
	for _, l := range links {
		x := func(s *slot) int { return int(math.Round(s.x + shift)) }
		var b strings.Builder
		x1, y1 := x(l.from), top(l.from.layer)+nodeH
		fmt.Fprintf(&b, "M%d,%d", x1, y1)
		for _, p := range append(slices.Clone(l.via), l.to) {
			x2, y2 := x(p), top(p.layer)
			my := (y1 + y2) / 2
			fmt.Fprintf(&b, " C%d,%d %d,%d %d,%d", x1, my, x2, my, x2, y2)
			x1, y1 = x2, y2
			if p.n == nil { // through the layer, straight down
				y1 += nodeH
				fmt.Fprintf(&b, " L%d,%d", x1, y1)
			}
		}
		out = append(out, edge{Path: b.String(), Class: l.class, From: l.ends[0], To: l.ends[1]})
	}
	height := 2 * margin
	if len(layers) > 0 {
		height = top(len(layers)-1) + nodeH + margin
	}
	return out, int(math.Ceil(maxX + shift + margin)), height
}

// orderLayers orders each layer to reduce edge crossings: sweeps down
// (by the median position of the neighbours above) and up (below),
// keeping the order with the fewest crossings seen.
func orderLayers(layers [][]*slot) {
	edges := 0
	for _, ls := range layers {
		for _, s := range ls {
			edges += len(s.down)
		}
	}
	if edges > maxCountedEdges {
		// Counting crossings is quadratic in the edges between two
		// layers: on a graph this dense, one sweep each way is the
		// ordering.
		for l := 1; l < len(layers); l++ {
			sortByMedian(layers[l], func(s *slot) []*slot { return s.up })
		}
		for l := len(layers) - 2; l >= 0; l-- {
			sortByMedian(layers[l], func(s *slot) []*slot { return s.down })
		}
		return
	}
	best := snapshot(layers)
	fewest := crossings(layers)
	for i := 0; i < orderSweeps && fewest > 0; i++ {
		if i%2 == 0 {
			for l := 1; l < len(layers); l++ {
				sortByMedian(layers[l], func(s *slot) []*slot { return s.up })
			}
		} else {
			for l := len(layers) - 2; l >= 0; l-- {
				sortByMedian(layers[l], func(s *slot) []*slot { return s.down })
			}
		}
		if c := crossings(layers); c < fewest {
			fewest, best = c, snapshot(layers)
		}
	}
	for l := range layers {
		layers[l] = best[l]
		for i, s := range layers[l] {
			s.pos = i
		}
	}
}

func snapshot(layers [][]*slot) [][]*slot {
	out := make([][]*slot, len(layers))
	for i, ls := range layers {
		out[i] = slices.Clone(ls)
	}
	return out
}

// sortByMedian orders a layer by the median position of each slot's
// neighbours in the layer swept from; a slot without any keeps its place.
func sortByMedian(ls []*slot, neighbours func(*slot) []*slot) {
	key := make(map[*slot]float64, len(ls))
	for _, s := range ls {
		ns := neighbours(s)
		if len(ns) == 0 {
			key[s] = float64(s.pos)
			continue
		}
		ps := make([]int, len(ns))
		for i, n := range ns {
			ps[i] = n.pos
		}
		slices.Sort(ps)
		m := len(ps) / 2
		if len(ps)%2 == 1 {
			key[s] = float64(ps[m])
		} else {
			key[s] = float64(ps[m-1]+ps[m]) / 2
		}
	}
	slices.SortStableFunc(ls, func(a, b *slot) int { return cmp.Compare(key[a], key[b]) })
	for i, s := range ls {
		s.pos = i
	}
}

// crossings counts the pairs of edges that cross between adjacent
// layers.
func crossings(layers [][]*slot) int {
	n := 0
	for l := 0; l+1 < len(layers); l++ {
		var es [][2]int
		for _, s := range layers[l] {
			for _, d := range s.down {
				es = append(es, [2]int{s.pos, d.pos})
			}
		}
		for i := range es {
			for j := i + 1; j < len(es); j++ {
				a, b := es[i], es[j]
				if (a[0] < b[0] && a[1] > b[1]) || (a[0] > b[0] && a[1] < b[1]) {
					n++
				}
			}
		}
	}
	return n
}

// placeX gives each slot an x: first packed left to right, then, round
// after round, pulled towards the mean x of its neighbours above (even
// rounds) or below (odd ones) as far as the order and the gaps allow.
func placeX(layers [][]*slot) {
	for _, ls := range layers {
		x := 0.0
		for i, s := range ls {
			if i > 0 {
				x += sep(ls[i-1], s)
			}
			s.x = x
		}
	}
	for r := range placeRounds {
		for k := range layers {
			l := k
			if r%2 == 1 {
				l = len(layers) - 1 - k
			}
			ls := layers[l]
			want := make([]float64, len(ls))
			for i, s := range ls {
				ns := s.up
				if r%2 == 1 {
					ns = s.down
				}
				want[i] = s.x
				if len(ns) > 0 {
					sum := 0.0
					for _, n := range ns {
						sum += n.x
					}
					want[i] = sum / float64(len(ns))
				}
			}
			// The nearest placement to want that keeps the gaps: the mean
			// of packing from the left and from the right.
			left := slices.Clone(want)
			for i := 1; i < len(ls); i++ {
				left[i] = max(left[i], left[i-1]+sep(ls[i-1], ls[i]))
			}
			right := slices.Clone(want)
			for i := len(ls) - 2; i >= 0; i-- {
				right[i] = min(right[i], right[i+1]-sep(ls[i], ls[i+1]))
			}
			for i, s := range ls {
				s.x = (left[i] + right[i]) / 2
			}
		}
	}
}

// sep is the least distance between the centres of neighbours a, b.
func sep(a, b *slot) float64 {
	gap := float64(gapX)
	if a.n == nil || b.n == nil {
		gap = bendGap
	}
	return (a.width()+b.width())/2 + gap
}
