package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/console"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/memstore"
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

// TestBrowserRetryFailedRun drives a real headless Chromium: it loads the
// runs page, opens the failed run, checks that its failed step is drawn
// failed, retries it through the confirmation, and sees the run complete
// as the page refreshes itself.
func TestBrowserRetryFailedRun(t *testing.T) {
	exe := chromium(t)
	ctx := context.Background()
	st := memstore.New(nil)
	fail := true
	run := func(name string) func(context.Context, engine.StepInput) ([]byte, error) {
		return func(context.Context, engine.StepInput) ([]byte, error) {
			if name == "charge" && fail {
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
		fail = i == 1
		id, err := e.Trigger(ctx, "order", "acme", i)
		require.NoError(t, err)
		_, _ = e.Wait(ctx, id)
	}
	fail = true
	failed, err := e.Trigger(ctx, "order", "globex", 9)
	require.NoError(t, err)
	_, err = e.Wait(ctx, failed)
	require.Error(t, err)
	fail = false // the card works now: a retry completes

	h, err := console.New(st, console.Options{})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/dagen/", http.StripPrefix("/dagen", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	actx, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	dir := screenshotDir(t)
	shot := func(name string) chromedp.Action {
		var buf []byte
		return chromedp.Tasks{
			chromedp.FullScreenshot(&buf, 100), // 100: PNG,
			chromedp.ActionFunc(func(context.Context) error { return os.WriteFile(filepath.Join(dir, name), buf, 0o644) }),
		}
	}

	var runsText, failedClass, failureText, status string
	var nodes int
	err = chromedp.Run(bctx,
		chromedp.Navigate(srv.URL+"/dagen/"),
		chromedp.WaitVisible(`#runs`),
		chromedp.Text(`#runs`, &runsText),
		shot("runs.png"),
		chromedp.Click(`a[href="./runs/`+failed.String()+`"]`),
		chromedp.WaitVisible(`#dag`),
		chromedp.AttributeValue(`g[data-step="charge"]`, "class", &failedClass, nil),
		chromedp.Text(`#failure`, &failureText),
		chromedp.Evaluate(`document.querySelectorAll("#dag g.node").length`, &nodes),
		shot("failed-run.png"),
		chromedp.Click(`#retry`),
		chromedp.WaitVisible(`#retry-confirm`),
		chromedp.Click(`#retry-confirm`),
		chromedp.WaitVisible(`#done`),
		// The page refreshes itself every 2 s while the run moves.
		chromedp.Poll(`document.querySelector("#run-status") && document.querySelector("#run-status").textContent == "completed"`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Text(`#run-status`, &status),
		shot("retried-run.png"),
	)
	require.NoError(t, err)
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
