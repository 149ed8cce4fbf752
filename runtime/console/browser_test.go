package console_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/console"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
)

// chromium returns the path of a Chromium to drive, or skips the test
// when there is none (.ci/run installs one, so CI runs these tests).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DAGEN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on this machine: install the chromium package (.ci/run does) to run the browser tests")
	return ""
}

// screenshotDir is where the browser tests save their screenshots:
// $DAGEN_SCREENSHOTS when set (to look at them), else a temporary
// directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("DAGEN_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

// browser starts a headless Chromium for the test, its window 1280×900,
// and returns a context that drives it for at most three minutes: a
// guard against a page that never comes, not a measure of speed. The
// sign-in test's dozen pages and screenshots took over a minute once while
// make test ran the failover tests' clusters beside it.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	bctx, cancel = context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(cancel)
	return bctx
}

// shot returns an action that saves a screenshot as dir/name, a PNG: of
// the element sel, or of the whole page when sel is empty.
func shot(dir, name, sel string) chromedp.Action {
	var buf []byte
	capture := chromedp.FullScreenshot(&buf, 100) // 100: PNG
	if sel != "" {
		capture = chromedp.Screenshot(sel, &buf, chromedp.NodeVisible)
	}
	return chromedp.Tasks{
		capture,
		chromedp.ActionFunc(func(context.Context) error { return os.WriteFile(filepath.Join(dir, name), buf, 0o644) }),
	}
}

// TestBrowserRetryFailedRun drives a real headless Chromium: it loads the
// runs page, opens the failed run, checks that its failed step is drawn
// failed, retries it through the confirmation, and sees the run complete
// as the page refreshes itself.
func TestBrowserRetryFailedRun(t *testing.T) {
	exe := chromium(t)
	ctx := context.Background()
	st := pgStore(t)
	var fail atomic.Bool
	run := func(name string) func(context.Context, engine.StepInput) ([]byte, error) {
		return func(context.Context, engine.StepInput) ([]byte, error) {
			if name == "charge" && fail.Load() {
				return nil, dag.Terminal(errors.New("card declined: insufficient funds"))
			}
			return engine.Encode(map[string]string{"step": name, "at": time.Now().UTC().Format(time.RFC3339)})
		}
	}
	step := func(name string, parents ...string) engine.Step {
		s := engine.Step{Name: name, OutputType: "map", Run: run(name)}
		for _, p := range parents {
			s.Parents = append(s.Parents, engine.Parent{Name: p})
		}
		return s
	}
	def := &engine.Definition{Name: "order", Steps: []engine.Step{
		step("validate"), step("reserve", "validate"), step("charge", "validate"),
		step("ship", "reserve", "charge"), step("notify", "ship"),
	}}
	e, err := engine.New(st, &engine.Config{PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	for i := range 3 {
		if i == 2 {
			continue
		}
		fail.Store(i == 1)
		id, err := e.Trigger(ctx, "order", "acme", i)
		require.NoError(t, err)
		_, _ = e.Wait(ctx, id)
	}
	fail.Store(true)
	failed, err := e.Trigger(ctx, "order", "globex", 9)
	require.NoError(t, err)
	_, err = e.Wait(ctx, failed)
	require.Error(t, err)
	fail.Store(false) // the card works now: a retry completes

	srv := serve(t, st, console.Options{})
	bctx := browser(t, exe)
	dir := screenshotDir(t)

	var runsText, failedClass, failureText, status string
	var nodes int
	err = chromedp.Run(bctx,
		chromedp.Navigate(srv.URL+"/dagen/"),
		chromedp.WaitVisible(`#runs`),
		chromedp.Text(`#runs`, &runsText),
		shot(dir, "runs.png", ""),
		chromedp.Click(`a[href="./runs/`+failed.String()+`"]`),
		chromedp.WaitVisible(`#dag`),
		chromedp.AttributeValue(`g[data-step="charge"]`, "class", &failedClass, nil),
		chromedp.Text(`#failure`, &failureText),
		chromedp.Evaluate(`document.querySelectorAll("#dag g.node").length`, &nodes),
		shot(dir, "failed-run.png", ""),
		chromedp.Click(`#retry`),
		chromedp.WaitVisible(`#retry-confirm`),
		chromedp.Click(`#retry-confirm`),
		chromedp.WaitVisible(`#done`),
	)
	require.NoError(t, err)
	// The page refreshes itself every 2 s while the run moves: read its
	// status until it says completed, through the reloads.
	for deadline := time.Now().Add(30 * time.Second); strings.TrimSpace(status) != "completed" && time.Now().Before(deadline); {
		rctx, cancel := context.WithTimeout(bctx, 2*time.Second)
		if err := chromedp.Run(rctx, chromedp.Text(`#run-status`, &status)); err != nil {
			status = "" // the page reloaded under us: read again
		}
		cancel()
	}
	require.NoError(t, chromedp.Run(bctx, shot(dir, "retried-run.png", "")))
	require.Contains(t, runsText, failed.String())
	require.Contains(t, runsText, "charge: card declined")
	require.Contains(t, failedClass, "st-failed", "the failed step is drawn failed")
	require.Contains(t, failureText, "failed at charge, attempt 1: card declined: insufficient funds")
	require.Equal(t, 5, nodes)
	require.Equal(t, "completed", strings.TrimSpace(status))
	res, err := e.Result(ctx, failed)
	require.NoError(t, err)
	require.Equal(t, "COMPLETED", string(res.Status))
	t.Logf("screenshots in %s", dir)
}

// TestBrowserLargeRun draws a finished run of a 200-step DAG in Chromium:
// every step is a node inside the drawing, no two nodes overlap, and
// every edge is drawn. The screenshot is for people to judge whether it
// reads.
func TestBrowserLargeRun(t *testing.T) {
	exe := chromium(t)
	ctx := context.Background()
	st := pgStore(t)
	e, err := engine.New(st, &engine.Config{Manual: true, BatchSize: 500})
	require.NoError(t, err)
	require.NoError(t, e.Register(wideDAG(10, 20)))
	id, err := e.Trigger(ctx, "big", "t", 1)
	require.NoError(t, err)
	_, err = e.Wait(ctx, id)
	require.NoError(t, err)
	srv := serve(t, st, console.Options{})

	var overlaps, outside, nodes, edges, lit int
	err = chromedp.Run(browser(t, exe),
		chromedp.EmulateViewport(4800, 1200), // the whole graph in one screenshot
		chromedp.Navigate(srv.URL+"/dagen/runs/"+id.String()),
		chromedp.WaitVisible(`#dag`),
		chromedp.Evaluate(`document.querySelectorAll("#dag g.node").length`, &nodes),
		chromedp.Evaluate(`document.querySelectorAll("#dag .edge").length`, &edges),
		// Boxes in the SVG's own coordinates: overlapping pairs, and
		// nodes outside the drawing's viewBox.
		chromedp.Evaluate(`(() => {
			const svg = document.querySelector("svg#dag");
			const vb = svg.viewBox.baseVal;
			const boxes = [...svg.querySelectorAll("g.node rect")].map(r => r.getBBox());
			let over = 0, out = 0;
			for (let i = 0; i < boxes.length; i++) {
				const a = boxes[i];
				if (a.x < vb.x || a.y < vb.y || a.x + a.width > vb.x + vb.width || a.y + a.height > vb.y + vb.height) out++;
				for (let j = i + 1; j < boxes.length; j++) {
					const b = boxes[j];
					if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) over++;
				}
			}
			window.__outside = out;
			return over;
		})()`, &overlaps),
		chromedp.Evaluate(`window.__outside`, &outside),
		shot(screenshotDir(t), "large-run-graph.png", `section.graph`),
		// Hovering a step lights its edges: s5_0's two parents and the
		// two steps after it.
		chromedp.Evaluate(`document.querySelector('g.node[data-step="s5_0"]').dispatchEvent(new MouseEvent("mouseenter")); document.querySelectorAll("#dag path.edge.lit").length`, &lit),
	)
	require.NoError(t, err)
	require.Equal(t, 200, nodes)
	require.Equal(t, 360, edges, "9 layers of 20 steps, two parents each")
	require.Zero(t, overlaps, "overlapping nodes")
	require.Zero(t, outside, "nodes outside the drawing")
	require.Equal(t, 4, lit, "the hovered step's edges light up")
}

// TestBrowserSignIn drives the console's sign-in in Chromium: a wrong
// password is refused; a viewer sees no action buttons and a POST of
// theirs is refused with 403; an operator retries the failed run; signing
// out goes back to the login page.
func TestBrowserSignIn(t *testing.T) {
	exe := chromium(t)
	s := seed(t, console.Options{Auth: &console.Auth{Accounts: accounts}})
	bctx := browser(t, exe)
	dir := screenshotDir(t)
	runURL := s.srv.URL + "/dagen/runs/" + s.failed.String()
	signIn := func(name, password string) chromedp.Action {
		return chromedp.Tasks{
			chromedp.Navigate(s.srv.URL + "/dagen/"),
			chromedp.WaitVisible(`#login`),
			chromedp.SetValue(`#name`, name),
			chromedp.SetValue(`#password`, password),
			chromedp.Click(`#signin`),
		}
	}
	var wrong, user, done string
	var buttons, status int
	err := chromedp.Run(bctx,
		signIn("vera", "not her password"),
		chromedp.WaitVisible(`#wrong`),
		chromedp.Text(`#wrong`, &wrong),
		shot(dir, "login-wrong.png", ""),

		signIn("vera", "look but do not touch"),
		chromedp.WaitVisible(`#runs`),
		chromedp.Navigate(runURL),
		chromedp.WaitVisible(`#dag`),
		chromedp.Text(`#user`, &user),
		chromedp.Evaluate(`document.querySelectorAll("#retry, #cancel, .actions form").length`, &buttons),
		shot(dir, "viewer-run.png", ""),
		// The viewer posts a retry with the page's own CSRF token (the
		// sign-out form's), as a hand-made form would: refused.
		chromedp.Evaluate(`fetch("`+s.failed.String()+`/retry", {method: "POST",
			body: new URLSearchParams({csrf: document.querySelector('input[name="csrf"]').value, mode: "failed"})}).then(r => r.status)`,
			&status, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }),
		chromedp.Click(`#logout`),
		chromedp.WaitVisible(`#login`),
	)
	require.NoError(t, err)
	require.Contains(t, wrong, "Wrong name or password")
	require.Contains(t, user, "vera (viewer)")
	require.Zero(t, buttons, "a viewer sees no action buttons")
	require.Equal(t, 403, status, "a viewer's retry is refused")

	var after string
	err = chromedp.Run(bctx,
		signIn("otto", "ship it"),
		chromedp.WaitVisible(`#runs`),
		chromedp.Navigate(runURL),
		chromedp.WaitVisible(`#dag`),
		chromedp.Click(`#retry`),
		chromedp.WaitVisible(`#retry-confirm`),
		chromedp.Click(`#retry-confirm`),
		chromedp.WaitVisible(`#done`),
		chromedp.Text(`#done`, &done),
		shot(dir, "operator-retried.png", ""),
		chromedp.Click(`#logout`),
		chromedp.WaitVisible(`#login`),
		chromedp.Navigate(runURL),
		chromedp.WaitVisible(`#login`),
		chromedp.Location(&after),
	)
	require.NoError(t, err)
	require.Contains(t, done, "retried")
	require.True(t, strings.HasSuffix(after, "/dagen/login"), "signed out: back to the login page, at %s", after)
	t.Logf("screenshots in %s", dir)
}

// TestBrowserChildRuns follows the links between a parent run and its
// child in Chromium: the child step's node links to the child run, whose
// page links back to the parent run.
func TestBrowserChildRuns(t *testing.T) {
	exe := chromium(t)
	st := pgStore(t)
	f := seedFamily(t, st)
	srv := serve(t, st, console.Options{})
	bctx := browser(t, exe)
	dir := screenshotDir(t)

	var links int
	var childAt, parentText, parentAt, filtered string
	err := chromedp.Run(bctx,
		chromedp.Navigate(srv.URL+"/dagen/runs/"+f.parent.String()),
		chromedp.WaitVisible(`#dag`),
		chromedp.Evaluate(`document.querySelectorAll("#dag a.child-link").length`, &links),
		shot(dir, "parent-run.png", ""),
		chromedp.Click(`#dag a.child-link[data-step="ship"] text`),
		chromedp.WaitVisible(`#parent`),
		chromedp.Location(&childAt),
		chromedp.Text(`#parent`, &parentText),
		shot(dir, "child-run.png", ""),
		chromedp.Click(`#parent-run`),
		chromedp.WaitVisible(`#dag`),
		chromedp.Location(&parentAt),
		chromedp.Navigate(srv.URL+"/dagen/"),
		chromedp.WaitVisible(`#children`),
		chromedp.SetValue(`#children`, "only"),
		chromedp.Submit(`#children`),
		chromedp.WaitVisible(`#runs`),
		chromedp.Text(`#runs`, &filtered),
		shot(dir, "child-runs.png", ""),
	)
	require.NoError(t, err)
	require.Equal(t, 1, links, "ship links its child run; boxes is mapped, its elements' children are in its section")
	require.True(t, strings.HasSuffix(childAt, "/dagen/runs/"+f.second.String()), "the node goes to the latest attempt's child, at %s", childAt)
	require.Contains(t, parentText, "parent run "+f.parent.String()+" step ship (attempt 2)")
	require.True(t, strings.HasSuffix(parentAt, "/dagen/runs/"+f.parent.String()), "back at the parent, at %s", parentAt)
	require.Contains(t, filtered, f.second.String())
	require.NotContains(t, filtered, f.parent.String(), "only child runs")
	t.Logf("screenshots in %s", dir)
}
