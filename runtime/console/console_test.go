package console_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/console"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// seeded is a console over a memstore with a completed and a failed run
// of workflow ship, mounted under /dagen as a service would.
type seeded struct {
	srv        *httptest.Server
	st         *memstore.Store
	e          *engine.Engine
	ok, failed dag.RunID
	flaky      *bool
}

func seed(t *testing.T, opts console.Options) *seeded {
	t.Helper()
	ctx := context.Background()
	st := memstore.New(nil)
	e, err := engine.New(st, &engine.Config{Manual: true})
	require.NoError(t, err)
	fail := true
	step := func(name string, parents ...string) engine.Step {
		s := engine.Step{Name: name, OutputType: "string", Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
			n, err := engine.Input[int](in)
			if err != nil {
				return nil, err
			}
			if name == "pack" && n == 2 && fail {
				return nil, dag.Terminal(errors.New("boom: out of boxes"))
			}
			return engine.Encode(map[string]any{"step": name, "n": n, "note": strings.Repeat("x", 5000*(n%2))})
		}}
		for _, p := range parents {
			s.Parents = append(s.Parents, engine.Parent{Name: p})
		}
		return s
	}
	send := step("send", "pack", "label")
	send.Parents[1].Optional = true // drawn dashed
	require.NoError(t, e.Register(&engine.Definition{Name: "ship", Steps: []engine.Step{step("pick"), step("pack", "pick"), step("label", "pick"), send}}))
	ok, err := e.Trigger(ctx, "ship", "acme", 1)
	require.NoError(t, err)
	_, err = e.Wait(ctx, ok)
	require.NoError(t, err)
	failed, err := e.Trigger(ctx, "ship", "zeta", 2)
	require.NoError(t, err)
	_, err = e.Wait(ctx, failed)
	require.Error(t, err)
	return &seeded{srv: serve(t, st, opts), st: st, e: e, ok: ok, failed: failed, flaky: &fail}
}

// serve mounts a console over st under /dagen, as a service would.
func serve(t *testing.T, st store.Store, opts console.Options) *httptest.Server {
	t.Helper()
	h, err := console.New(st, opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/dagen/", http.StripPrefix("/dagen", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// pgStore returns a pgstore over a fresh schema, for the browser tests
// (which load their pages from a seeded database, as an operator's
// console does) and the benchmarks.
func pgStore(tb testing.TB) *pgstore.Store {
	tb.Helper()
	pool := pgtest.Pool(tb, pgtest.Schema(tb), 8)
	require.NoError(tb, pgstore.Migrate(context.Background(), pool))
	st, err := pgstore.New(context.Background(), pool, nil)
	require.NoError(tb, err)
	return st
}

func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) (int, string, string) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header.Get("Location")
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]{32})"`)

func TestRunsPage(t *testing.T) {
	s := seed(t, console.Options{})
	c := client(t)
	code, body := get(t, c, s.srv.URL+"/dagen/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `href="./runs/`+s.ok.String()+`"`, "links are relative to the mount point")
	require.Contains(t, body, s.failed.String())
	require.Contains(t, body, "pack: boom: out of boxes", "a failed run shows its failure")
	require.Regexp(t, `<span>completed</span> <b>1</b>`, body)
	require.Regexp(t, `<span>failed</span> <b>1</b>`, body)
	require.Less(t, strings.Index(body, s.failed.String()), strings.Index(body, s.ok.String()), "newest first")
	require.NotContains(t, body, `http-equiv="refresh"`, "nothing moves: no refresh")

	_, body = get(t, c, s.srv.URL+"/dagen/?status=failed")
	require.Contains(t, body, s.failed.String())
	require.NotContains(t, body, "runs/"+s.ok.String())
	_, body = get(t, c, s.srv.URL+"/dagen/?tenant=acme")
	require.Contains(t, body, "runs/"+s.ok.String())
	require.NotContains(t, body, "runs/"+s.failed.String())
	_, body = get(t, c, s.srv.URL+"/dagen/?limit=1")
	require.Contains(t, body, `id="next"`, "a second page")

	minute := func(d time.Duration) string { return time.Now().UTC().Add(d).Format("2006-01-02T15:04") }
	_, body = get(t, c, s.srv.URL+"/dagen/?from="+minute(-time.Hour)+"&to="+minute(time.Hour))
	require.Contains(t, body, "runs/"+s.ok.String(), "created within the range")
	require.Contains(t, body, "runs/"+s.failed.String())
	_, body = get(t, c, s.srv.URL+"/dagen/?to="+minute(-time.Hour))
	require.Contains(t, body, "no runs match", "all created after to")
	_, body = get(t, c, s.srv.URL+"/dagen/?from="+time.Now().UTC().Add(time.Hour).Format(time.RFC3339))
	require.Contains(t, body, "no runs match", "all created before from")

	for _, bad := range []string{"?status=lost", "?since=yesterday", "?after=nope", "?limit=0", "?from=monday",
		"?to=2026-13-01", "?from=2026-11-24&to=2026-11-23", "?since=1h&from=2026-11-24"} {
		code, body := get(t, c, s.srv.URL+"/dagen/"+bad)
		require.Equal(t, http.StatusBadRequest, code, bad)
		require.Contains(t, body, `id="error"`, bad)
	}
	code, _ = get(t, c, s.srv.URL+"/dagen/static/console.css")
	require.Equal(t, http.StatusOK, code)
}

func TestRunPage(t *testing.T) {
	s := seed(t, console.Options{})
	c := client(t)
	code, body := get(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String())
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<svg id="dag"`)
	require.Regexp(t, `class="node st-failed" data-step="pack" data-status="failed"`, body, "the failed step is drawn failed")
	require.Regexp(t, `class="node st-completed" data-step="pick"`, body)
	require.Regexp(t, `class="node st-cancelled" data-step="send"`, body)
	require.Contains(t, body, `failed at <a href="#step-pack">pack</a>, attempt 1: boom: out of boxes`)
	require.Contains(t, body, `id="retry"`, "a failed run can be retried")
	require.NotContains(t, body, `id="cancel"`, "a finished run cannot be cancelled")
	require.Contains(t, body, `href="../static/console.css"`)

	require.Equal(t, 1, strings.Count(body, `class="edge done optional"`), "send takes label as optional: one dashed edge")
	require.Equal(t, 3, strings.Count(body, `<path class="edge `)-1, "the other edges are required")

	// Large outputs are cut, with a link to see them all.
	_, body = get(t, c, s.srv.URL+"/dagen/runs/"+s.ok.String())
	require.Contains(t, body, "show all of the output")
	_, full := get(t, c, s.srv.URL+"/dagen/runs/"+s.ok.String()+"?full=pick")
	require.Greater(t, len(full), len(body))

	code, body = get(t, c, s.srv.URL+"/dagen/runs/"+dag.NewRunID().String())
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "no run ")
	code, _ = get(t, c, s.srv.URL+"/dagen/runs/not-an-id")
	require.Equal(t, http.StatusBadRequest, code)
}

func TestActions(t *testing.T) {
	s := seed(t, console.Options{})
	c := client(t)
	_, body := get(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String())
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, "the page carries a CSRF token")
	tok := m[1]

	// Without the token, or with another, nothing happens.
	code, _, _ := post(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", url.Values{"mode": {"failed"}})
	require.Equal(t, http.StatusForbidden, code)
	code, _, _ = post(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", url.Values{"mode": {"failed"}, "csrf": {strings.Repeat("0", 32)}})
	require.Equal(t, http.StatusForbidden, code)
	other := client(t) // no cookie: a page of another origin posting
	code, _, _ = post(t, other, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", url.Values{"mode": {"failed"}, "csrf": {tok}})
	require.Equal(t, http.StatusForbidden, code)
	run, err := s.st.GetRun(context.Background(), s.failed)
	require.NoError(t, err)
	require.Equal(t, store.RunFailed, run.Status)

	code, body, _ = post(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", url.Values{"mode": {"sideways"}, "csrf": {tok}})
	require.Equal(t, http.StatusConflict, code, body)

	*s.flaky = false // the fault is fixed: the retry completes
	code, _, loc := post(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", url.Values{"mode": {"failed"}, "csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Regexp(t, `^\.\./`+s.failed.String()+`\?done=retried\+%28failed%29%3A\+\d\+steps\+reset$`, loc)
	res, err := s.e.Wait(context.Background(), s.failed)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	_, body = get(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String()+"?done=retried")
	require.Contains(t, body, `id="done">retried<`)
	require.Regexp(t, `class="node st-completed" data-step="pack"`, body)

	// Cancel a running run; a finished one cannot be.
	id, err := s.e.Trigger(context.Background(), "ship", "acme", 3)
	require.NoError(t, err)
	_, body = get(t, c, s.srv.URL+"/dagen/runs/"+id.String())
	require.Contains(t, body, `http-equiv="refresh"`, "a moving run refreshes itself")
	require.Contains(t, body, "queued, but no live worker serves its signature", "no worker heartbeats in this test")
	require.Contains(t, body, "waits for its parents: pick (queued)")
	code, _, _ = post(t, c, s.srv.URL+"/dagen/runs/"+id.String()+"/cancel", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, code)
	run, err = s.st.GetRun(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, store.RunCancelled, run.Status)
	code, body, _ = post(t, c, s.srv.URL+"/dagen/runs/"+id.String()+"/cancel", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, body, "the run had finished already")
	code, _, _ = post(t, c, s.srv.URL+"/dagen/runs/"+dag.NewRunID().String()+"/cancel", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusNotFound, code)
}

func TestWorkersPage(t *testing.T) {
	s := seed(t, console.Options{})
	ctx := context.Background()
	_, err := s.st.Heartbeat(ctx, "w-alive", time.Minute, nil)
	require.NoError(t, err)
	tasks, err := s.st.ListTasks(ctx, s.ok)
	require.NoError(t, err)
	sigs := []string{"sig-gone"}
	for _, task := range tasks {
		sigs = append(sigs, task.Signature)
	}
	require.NoError(t, s.st.Serve(ctx, "w-alive", store.Serving{Signatures: sigs, Concurrency: 16}))
	_, err = s.e.Trigger(ctx, "ship", "acme", 5) // queued: backlog
	require.NoError(t, err)
	code, body := get(t, client(t), s.srv.URL+"/dagen/workers")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "<code>w-alive</code>")
	require.Contains(t, body, "<td>16</td>", "its concurrency")
	require.Contains(t, body, `<summary>ship <span class="meta">4 steps</span></summary><code>label</code>, <code>pack</code>, <code>pick</code>, <code>send</code>`,
		"the steps it serves, by workflow")
	require.Contains(t, body, `<summary>unknown <span class="meta">1 step</span></summary><code>sig-gone</code>`, "a signature never recorded")
	require.Regexp(t, `<td>acme</td><td>ship</td><td>1</td>`, body, "one queued task of tenant acme")
	require.Contains(t, body, `href="./workers"`)
}

func TestReadOnly(t *testing.T) {
	s := seed(t, console.Options{ReadOnly: true})
	c := client(t)
	_, body := get(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String())
	require.NotContains(t, body, `id="retry"`, "no action buttons")
	require.Contains(t, body, "read-only")
	code, body, _ := post(t, c, s.srv.URL+"/dagen/runs/"+s.failed.String()+"/retry", url.Values{"mode": {"failed"}})
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "read-only")
}

var _ = time.Second

// TestRunPageSaysWhatIsAheadInTheQueue checks "why not running" for a
// queued step: how many tasks the fair queue hands out before it, and how
// many of them are its tenant's.
func TestRunPageSaysWhatIsAheadInTheQueue(t *testing.T) {
	s := seed(t, console.Options{})
	ctx := context.Background()
	var last dag.RunID
	for i := range 3 { // the manual engine runs nothing: the roots stay queued
		id, err := s.e.Trigger(ctx, "ship", "acme", 10+i)
		require.NoError(t, err)
		last = id
	}
	_, err := s.e.Trigger(ctx, "ship", "zeta", 20)
	require.NoError(t, err)
	// A live worker serves the steps, busy elsewhere.
	tasks, err := s.st.ListTasks(ctx, last)
	require.NoError(t, err)
	var sigs []string
	for _, task := range tasks {
		sigs = append(sigs, task.Signature)
	}
	_, err = s.st.Heartbeat(ctx, "busy", time.Minute, nil)
	require.NoError(t, err)
	require.NoError(t, s.st.Serve(ctx, "busy", store.Serving{Signatures: sigs}))
	code, body := get(t, client(t), s.srv.URL+"/dagen/runs/"+last.String())
	require.Equal(t, http.StatusOK, code)
	require.Regexp(t, `queued: [23] tasks ahead of it in the fair queue \(2 of them tenant acme&#39;s\)`, body,
		"acme's two earlier picks are ahead, and zeta's if its block comes first")
	require.Contains(t, body, "waits for its parents: pick (queued)", "a step behind a queued parent says so")
}

// TestRunPageSaysWhichRateLimitAQueuedStepWaitsFor checks "why not
// running" for a queued step that waits for a rate limit's tokens: the
// page names the limit and when its next token comes, not the fair queue.
func TestRunPageSaysWhichRateLimitAQueuedStepWaitsFor(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(nil)
	e, err := engine.New(st, &engine.Config{Manual: true})
	require.NoError(t, err)
	require.NoError(t, e.Register(&engine.Definition{
		Name:       "pay",
		RateLimits: []engine.RateLimit{{Name: "stripe", Rate: 0.001, Burst: 1}},
		Steps: []engine.Step{{Name: "charge", OutputType: "string", RateLimit: &engine.StepRateLimit{Name: "stripe"},
			Run: func(context.Context, engine.StepInput) ([]byte, error) { return engine.Encode("ok") }}},
	}))
	first, err := e.Trigger(ctx, "pay", "acme", 1)
	require.NoError(t, err)
	second, err := e.Trigger(ctx, "pay", "acme", 2)
	require.NoError(t, err)
	_, err = st.FireTimers(ctx, 10) // admits the first: the bucket held one token
	require.NoError(t, err)
	// A live worker serves the step, busy elsewhere.
	tasks, err := st.ListTasks(ctx, second)
	require.NoError(t, err)
	_, err = st.Heartbeat(ctx, "busy", time.Minute, nil)
	require.NoError(t, err)
	require.NoError(t, st.Serve(ctx, "busy", store.Serving{Signatures: []string{tasks[0].Signature}}))

	srv := serve(t, st, console.Options{})
	code, body := get(t, client(t), srv.URL+"/dagen/runs/"+second.String())
	require.Equal(t, http.StatusOK, code)
	require.Regexp(t, `queued: waiting for rate limit stripe: next token in \d+(\.\d+)?m\d+(\.\d+)?s; it enters the fair queue when it can take its tokens`, body)
	require.NotContains(t, body, "ahead of it in the fair queue")
	code, body = get(t, client(t), srv.URL+"/dagen/runs/"+first.String())
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "queued: next in the fair queue", "the first run took the token")
	require.NotContains(t, body, "waiting for rate limit")
}
