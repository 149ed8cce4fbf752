package console_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/console"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// familyRuns are runs of workflows that start child runs, built with
// hand-made definitions as generated code would register them.
type familyRuns struct {
	// parent is a checkout run: its step ship ran shipping as a child,
	// which failed at attempt 1 (first) and completed at attempt 2, after
	// a retry (second); its mapped step boxes ran shipping for each
	// element of list.
	parent, first, second dag.RunID
	// waiting is a waiter run whose step hold waits, AWAITING, for its
	// child napping, a run of nap, which sleeps an hour.
	waiting, napping dag.RunID
}

// childWorkflows registers on e the workflows familyRuns runs: shipping
// (fails while broken is set), checkout, nap and waiter.
func childWorkflows(t *testing.T, e *engine.Engine, broken *atomic.Bool) {
	t.Helper()
	passInput := func(_ context.Context, in engine.StepInput) ([]byte, error) {
		n, err := engine.Input[int](in)
		if err != nil {
			return nil, err
		}
		return engine.Encode(n)
	}
	for _, def := range []*engine.Definition{
		{Name: "shipping", Steps: []engine.Step{{Name: "label", OutputType: "string", Run: func(context.Context, engine.StepInput) ([]byte, error) {
			if broken.Load() {
				return nil, dag.Terminal(errors.New("no carrier today"))
			}
			return engine.Encode("label")
		}}}},
		{Name: "checkout", Steps: []engine.Step{
			{Name: "ship", Kind: engine.KindChild, OutputType: "string", Child: &engine.Child{Workflow: "shipping", Result: "label"}, Run: passInput},
			{Name: "list", OutputType: "[]int", Parents: []engine.Parent{{Name: "ship"}}, Run: func(context.Context, engine.StepInput) ([]byte, error) {
				return engine.Encode([]int{1, 2})
			}},
			{Name: "boxes", Kind: engine.KindChild, Each: "list", Parents: []engine.Parent{{Name: "list"}}, OutputType: "string",
				Child: &engine.Child{Workflow: "shipping", Result: "label"},
				Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
					v, err := engine.ParentOutput[int](in, "list")
					if err != nil {
						return nil, err
					}
					return engine.Encode(v)
				}},
		}},
		{Name: "nap", Steps: []engine.Step{{Name: "zz", Kind: engine.KindSleep, Sleep: func(context.Context, engine.StepInput) (engine.Wake, error) {
			return engine.Wake{Delay: time.Hour}, nil
		}}}},
		{Name: "waiter", Steps: []engine.Step{
			{Name: "hold", Kind: engine.KindChild, Child: &engine.Child{Workflow: "nap"}, Run: passInput},
		}},
	} {
		require.NoError(t, e.Register(def))
	}
}

// seedFamily runs familyRuns on st with a manual engine.
func seedFamily(t *testing.T, st store.Store) familyRuns {
	t.Helper()
	ctx := context.Background()
	e, err := engine.New(st, &engine.Config{Manual: true})
	require.NoError(t, err)
	var broken atomic.Bool
	broken.Store(true)
	childWorkflows(t, e, &broken)
	var f familyRuns
	f.parent, err = e.Trigger(ctx, "checkout", "acme", 1)
	require.NoError(t, err)
	_, err = e.Wait(ctx, f.parent)
	require.ErrorIs(t, err, engine.ErrRunFailed)
	broken.Store(false)
	rt, err := store.ParseRetryMode("failed")
	require.NoError(t, err)
	_, err = st.RetryRun(ctx, f.parent, rt)
	require.NoError(t, err)
	_, err = e.Wait(ctx, f.parent)
	require.NoError(t, err)
	kids, err := st.ListChildren(ctx, f.parent)
	require.NoError(t, err)
	for _, k := range kids {
		if k.Task == "ship" && k.Attempt == 1 {
			f.first = k.ID
		}
		if k.Task == "ship" && k.Attempt == 2 {
			f.second = k.ID
		}
	}
	require.False(t, f.first.IsZero() || f.second.IsZero(), "ship's children: %+v", kids)

	f.waiting, err = e.Trigger(ctx, "waiter", "acme", 3)
	require.NoError(t, err)
	_, err = e.Wait(ctx, f.waiting)
	require.ErrorIs(t, err, engine.ErrRunBlocked, "the waiter waits for its napping child")
	kids, err = st.ListChildren(ctx, f.waiting)
	require.NoError(t, err)
	require.Len(t, kids, 1)
	f.napping = kids[0].ID
	return f
}

// TestChildRunPages: a child step's node and section link its child runs,
// the latest attempt's first; a mapped child step's section links its
// elements' children; a child run's page links its parent run and step;
// an AWAITING child step says which run it waits for.
func TestChildRunPages(t *testing.T) {
	st := pgStore(t)
	f := seedFamily(t, st)
	srv := serve(t, st, console.Options{})
	c := client(t)

	code, body := get(t, c, srv.URL+"/dagen/runs/"+f.parent.String())
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<text x="`, "a drawing")
	require.Regexp(t, `data-step="ship"[^>]*>\s*<rect[^>]*/>\s*<text[^>]*class="name">ship · runs shipping</text>`, body,
		"a child step is labelled with the workflow it runs")
	require.Contains(t, body, `<a href="../runs/`+f.second.String()+`" class="child-link" data-step="ship" data-child="`+f.second.String()+`">`,
		"the node links to its latest attempt's child run")
	require.Contains(t, body, `<title>child run `+f.second.String()+` of shipping: completed</title>`)
	ship := section(t, body, "ship")
	second := `<a class="child-run" href="../runs/` + f.second.String() + `">` + f.second.String() + `</a> shipping <span class="badge completed">completed</span> attempt 2</li>`
	first := `<a class="child-run" href="../runs/` + f.first.String() + `">` + f.first.String() + `</a> shipping <span class="badge failed">failed</span> attempt 1 (earlier)</li>`
	require.Contains(t, ship, second)
	require.Contains(t, ship, first)
	require.Less(t, strings.Index(ship, second), strings.Index(ship, first), "the latest attempt's child first")
	boxes := section(t, body, "boxes")
	require.Regexp(t, `boxes\[0\]: <a class="child-run" href="\.\./runs/[0-9a-f-]{36}">[0-9a-f-]{36}</a> shipping <span class="badge completed">`, boxes)
	require.Regexp(t, `boxes\[1\]: <a class="child-run" href="\.\./runs/`, boxes)
	require.NotContains(t, body, `id="parent"`, "a run a trigger started has no parent")
	require.Contains(t, body, `<option value="from=ship">from ship</option>`, "a retry can start from a child step")

	code, body = get(t, c, srv.URL+"/dagen/runs/"+f.first.String())
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<p class="meta" id="parent">parent run <a href="../runs/`+f.parent.String()+`" id="parent-run">`+f.parent.String()+
		`</a> step <a href="../runs/`+f.parent.String()+`#step-ship" id="parent-step">ship</a> (attempt 1)</p>`)
	require.NotContains(t, body, `class="child-link"`, "a run without children links none")

	_, body = get(t, c, srv.URL+"/dagen/runs/"+f.waiting.String())
	require.Contains(t, section(t, body, "hold"), "waiting for its child run "+f.napping.String()+" (nap, running)")
	require.Contains(t, body, `data-child="`+f.napping.String()+`"`)
	require.Contains(t, body, `data-step="hold"`)
	require.Contains(t, body, "hold · runs nap")
}

// section returns the step's section of a run page.
func section(t *testing.T, body, step string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<article class="step [^"]*" id="step-` + regexp.QuoteMeta(step) + `">.*?</article>`).FindString(body)
	require.NotEmpty(t, m, "no section of step %s", step)
	return m
}

// TestRunsPageChildrenFilter: the runs list shows child runs or not as
// the children filter says, keeps the choice in its form, and refuses an
// unknown one.
func TestRunsPageChildrenFilter(t *testing.T) {
	st := pgStore(t)
	f := seedFamily(t, st)
	srv := serve(t, st, console.Options{})
	c := client(t)
	link := func(id dag.RunID) string { return `href="./runs/` + id.String() + `"` }

	_, body := get(t, c, srv.URL+"/dagen/")
	for _, id := range []dag.RunID{f.parent, f.first, f.second, f.waiting, f.napping} {
		require.Contains(t, body, link(id), "all runs by default")
	}
	require.Contains(t, body, `<option value="all">all runs</option>`)

	_, body = get(t, c, srv.URL+"/dagen/?children=only")
	require.Contains(t, body, link(f.first))
	require.Contains(t, body, link(f.second))
	require.Contains(t, body, link(f.napping))
	require.NotContains(t, body, link(f.parent))
	require.NotContains(t, body, link(f.waiting))
	require.Contains(t, body, `<option value="only" selected>`)
	require.Regexp(t, `<span>failed</span> <b>1</b>`, body, "counts are of the child runs: ship's first")

	_, body = get(t, c, srv.URL+"/dagen/?children=none")
	require.Contains(t, body, link(f.parent))
	require.Contains(t, body, link(f.waiting))
	require.NotContains(t, body, link(f.first))
	require.NotContains(t, body, link(f.napping))
	require.Contains(t, body, `<option value="none" selected>`)
	require.Regexp(t, `href="\?children=none&amp;status=completed"`, body, "the status links keep the filter")

	code, body := get(t, c, srv.URL+"/dagen/?children=some")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, `children=&#34;some&#34;: want all, only`)
}
