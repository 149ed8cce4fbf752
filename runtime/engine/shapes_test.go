package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// recorder records the order in which steps ran; its steps join their
// input and their parents' outputs.
type recorder struct {
	mu    sync.Mutex
	order []string
}

func (r *recorder) step(name string) func(context.Context, engine.StepInput) ([]byte, error) {
	return fn(func(_ context.Context, in int, parents []string) (string, error) {
		r.mu.Lock()
		r.order = append(r.order, name)
		r.mu.Unlock()
		return fmt.Sprintf("%s(%d;%s)", name, in, strings.Join(parents, ",")), nil
	})
}

func (r *recorder) ran() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.order...)
}

func (r *recorder) index(name string) int {
	for i, n := range r.ran() {
		if n == name {
			return i
		}
	}
	return -1
}

func TestLinear(t *testing.T) {
	rec := &recorder{}
	def := &engine.Definition{Name: "linear", Steps: []engine.Step{
		{Name: "a", Run: rec.step("a")},
		{Name: "b", Parents: req("a"), Run: rec.step("b")},
		{Name: "c", Parents: req("b"), Run: rec.step("c")},
	}}
	_, res, err := runDef(t, def, 7)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	require.Equal(t, []string{"a", "b", "c"}, rec.ran())
	require.Equal(t, "c(7;b(7;a(7;)))", output(t, res, "c"))
}

func TestDiamond(t *testing.T) {
	rec := &recorder{}
	def := &engine.Definition{Name: "diamond", Steps: []engine.Step{
		{Name: "a", Run: rec.step("a")},
		{Name: "b", Parents: req("a"), Run: rec.step("b")},
		{Name: "c", Parents: req("a"), Run: rec.step("c")},
		{Name: "d", Parents: req("b", "c"), Run: rec.step("d")},
	}}
	_, res, err := runDef(t, def, 1)
	require.NoError(t, err)
	require.Equal(t, "d(1;b(1;a(1;)),c(1;a(1;)))", output(t, res, "d"))
	require.Equal(t, 4, len(rec.ran()), "every step exactly once: %v", rec.ran())
	require.Equal(t, 3, rec.index("d"), "the join runs last")
}

func TestWideFanOutFanIn(t *testing.T) {
	const width = 50
	rec := &recorder{}
	steps := []engine.Step{{Name: "root", Run: rec.step("root")}}
	var mids []string
	for i := range width {
		name := fmt.Sprintf("m%02d", i)
		mids = append(mids, name)
		steps = append(steps, engine.Step{Name: name, Parents: req("root"), Run: rec.step(name)})
	}
	steps = append(steps, engine.Step{Name: "join", Parents: req(mids...), Run: rec.step("join")})
	_, res, err := runDef(t, &engine.Definition{Name: "wide", Steps: steps}, 2)
	require.NoError(t, err)
	ran := rec.ran()
	require.Len(t, ran, width+2)
	require.Equal(t, "join", ran[len(ran)-1], "the join runs once, after all its parents")
	var want []string
	for _, m := range mids {
		want = append(want, fmt.Sprintf("%s(2;root(2;))", m))
	}
	require.Equal(t, fmt.Sprintf("join(2;%s)", strings.Join(want, ",")), output(t, res, "join"))
}

// TestTwoIndependentRoots runs a graph with two roots: both are ready at
// once, and each one's output reaches the children that name it.
func TestTwoIndependentRoots(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	def := &engine.Definition{Name: "roots", Steps: []engine.Step{
		{Name: "a", Run: rec.step("a")},
		{Name: "b", Run: rec.step("b")},
		{Name: "c", Parents: req("a", "b"), Run: rec.step("c")},
		{Name: "d", Parents: req("b"), Run: rec.step("d")},
	}}
	h := newHarness(t, def)
	id, err := h.Engine.Trigger(ctx, "roots", "t", 3)
	require.NoError(t, err)

	// Both roots are ready at once: the first round claims and runs both
	// in one batch, and then the children their results made ready, which
	// the store hands back to this worker with the completion.
	n, err := h.Engine.Poll(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	ran := rec.ran()
	require.ElementsMatch(t, []string{"a", "b"}, ran[:2], "the roots first, together")
	require.ElementsMatch(t, []string{"c", "d"}, ran[2:])

	h.RunUntilIdle(ctx)
	res, err := h.Engine.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	require.ElementsMatch(t, []string{"a", "b", "c", "d"}, rec.ran(), "every step exactly once")
	require.Equal(t, "a(3;)", output(t, res, "a"))
	require.Equal(t, "b(3;)", output(t, res, "b"))
	require.Equal(t, "c(3;a(3;),b(3;))", output(t, res, "c"), "the join gets both roots' outputs, in after= order")
	require.Equal(t, "d(3;b(3;))", output(t, res, "d"))
}
