package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dagenhq/dagen/internal/textfmt"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// maxElementsShown is how many unfinished elements of a mapped step a
// run page lists.
const maxElementsShown = 20

// maxEventsShown is how many of a run's latest events its page lists in
// the event log.
const maxEventsShown = 1000

// maxOutput is how much of a step's output a run page shows before the
// "show all" link.
const maxOutput = 4 << 10

// base is the relative path from the request's page to the console's
// root, so links work under any prefix the console is mounted at.
func base(r *http.Request) string {
	depth := strings.Count(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if depth == 0 {
		return "./"
	}
	return strings.Repeat("../", depth)
}

func urlQuery(s string) string { return url.QueryEscape(s) }

// runsPage lists runs: filters from the query (workflow, tenant, status,
// since, from, to, children, after), counts per status, newest first.
func (c *Console) runsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.RunFilter{Workflow: q.Get("workflow"), Tenant: q.Get("tenant"), Limit: store.DefaultPageSize}
	var bad []string
	for _, s := range q["status"] {
		for _, part := range strings.Split(s, ",") {
			if part == "" {
				continue
			}
			st := store.RunStatus(strings.ToUpper(part))
			if !slices.Contains(store.RunStatuses, st) {
				bad = append(bad, fmt.Sprintf("unknown status %q: want queued, running, completed, failed or cancelled", part))
				continue
			}
			f.Statuses = append(f.Statuses, st)
		}
	}
	if s := q.Get("since"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			bad = append(bad, fmt.Sprintf("since=%q: want a duration such as 24h", s))
		} else {
			f.CreatedFrom = c.opts.Now().Add(-d)
		}
	}
	if s := q.Get("from"); s != "" {
		at, err := parseTime(s)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("from=%q: %v", s, err))
		case q.Get("since") != "":
			bad = append(bad, "give since or from, not both")
		default:
			f.CreatedFrom = at
		}
	}
	if s := q.Get("to"); s != "" {
		at, err := parseTime(s)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("to=%q: %v", s, err))
		case !f.CreatedFrom.IsZero() && !at.After(f.CreatedFrom):
			bad = append(bad, fmt.Sprintf("to=%q: not after the start of the range", s))
		default:
			f.CreatedTo = at
		}
	}
	switch s := q.Get("children"); s {
	case "", "all":
	case "only":
		f.Children = store.OnlyChild
	case "none":
		f.Children = store.NoChildren
	default:
		bad = append(bad, fmt.Sprintf("children=%q: want all, only (the runs a parent run's step started) or none (the others)", s))
	}
	if s := q.Get("after"); s != "" {
		id, err := dag.ParseRunID(s)
		if err != nil {
			bad = append(bad, fmt.Sprintf("after=%q: not a run id", s))
		}
		f.After = id
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > store.MaxPageSize {
			bad = append(bad, fmt.Sprintf("limit=%q: want 1 to %d", s, store.MaxPageSize))
		}
		f.Limit = n
	}
	if len(bad) > 0 {
		c.fail(w, r, http.StatusBadRequest, fmt.Errorf("%s", strings.Join(bad, "; ")))
		return
	}
	page, err := c.st.ListRuns(r.Context(), f)
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	cf := f
	cf.Statuses, cf.After = nil, dag.RunID{}
	counts, err := c.st.CountRuns(r.Context(), cf)
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	type count struct {
		Status store.RunStatus
		N      int
		Link   string
		On     bool
	}
	var cs []count
	moving := false
	for _, s := range store.RunStatuses {
		v := url.Values{}
		for k, vals := range q {
			if k != "status" && k != "after" {
				v[k] = vals
			}
		}
		v.Set("status", strings.ToLower(string(s)))
		cs = append(cs, count{Status: s, N: counts[s], Link: "?" + v.Encode(), On: slices.Contains(f.Statuses, s)})
		moving = moving || (!s.Terminal() && counts[s] > 0)
	}
	next := ""
	if !page.Next.IsZero() {
		v := url.Values{}
		for k, vals := range q {
			v[k] = vals
		}
		v.Set("after", page.Next.String())
		next = "?" + v.Encode()
	}
	c.render(w, r, "runs.html", map[string]any{
		"Runs": page.Runs, "Counts": cs, "Next": next, "Filter": f, "Query": q, "Refresh": moving,
		"StatusQuery": strings.Join(q["status"], ","),
	})
}

// timeLayouts are the forms of the runs page's from and to: what a
// datetime-local input sends, a date, or RFC 3339. Without a zone they
// are UTC, as the page shows times.
var timeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02", time.RFC3339}

func parseTime(s string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("want a time such as 2026-11-24T09:30 (UTC), 2026-11-24 or RFC 3339")
}

// runPage shows a run: its DAG, its steps and its event log.
func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	id, err := dag.ParseRunID(r.PathValue("id"))
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, fmt.Errorf("%q is not a run id", r.PathValue("id")))
		return
	}
	run, tasks, err := c.st.ReadRun(r.Context(), id)
	if err != nil {
		status := http.StatusInternalServerError
		if isNotFound(err) {
			status = http.StatusNotFound
			err = fmt.Errorf("no run %s", id)
		}
		c.fail(w, r, status, err)
		return
	}
	events, err := c.st.ListEvents(r.Context(), id)
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	kids, err := c.st.ListChildren(r.Context(), id)
	if err != nil {
		c.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	byTask := store.GroupChildren(kids)
	unserved := map[string]string{} // QUEUED steps no live worker serves, by name: their signature
	if !run.Status.Terminal() {
		us, err := c.st.Unserved(r.Context(), id)
		if err != nil {
			c.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		for _, u := range us {
			unserved[u.Step] = u.Signature
		}
	}
	full := r.URL.Query().Get("full") // a step whose whole output to show
	byStep := map[string][]store.Event{}
	for _, ev := range events {
		byStep[ev.Step] = append(byStep[ev.Step], ev)
	}
	var steps []stepView
	shown := map[string]int{} // unfinished elements listed, by mapped step
	hidden := 0
	for _, t := range tasks {
		if t.Kind == store.KindElement {
			// Completed elements count on their step's node; a few of the
			// others are listed, so a step of 10,000 elements stays a
			// page.
			step, _, _ := store.ParseElement(t.Name)
			if t.Status == store.TaskCompleted {
				continue
			}
			if shown[step]++; shown[step] > maxElementsShown {
				hidden++
				continue
			}
		}
		sv := stepView{Task: t, Class: statusClass(t.Status), Events: byStep[t.Name], Why: whyNotRunning(run, t, tasks), Children: byTask[t.Name]}
		if k, ok := store.CurrentChild(t, byTask); ok && t.Status == store.TaskAwaiting && !run.Status.Terminal() {
			sv.Why = fmt.Sprintf("waiting for its child run %s (%s, %s)", k.ID, k.Workflow, strings.ToLower(string(k.Status)))
		}
		if t.Kind == store.KindMap {
			sv.ElementChildren, sv.MoreElementChildren = elementChildren(t.Name, tasks, byTask)
		}
		if sig, ok := unserved[t.Name]; ok {
			sv.Why = "queued, but no live worker serves its signature " + sig + ": deploy code that has this step as it is (dagen check -db says what changed)"
		}
		sv.Output, sv.Truncated = prettyOutput(t.Output, full == t.Name)
		steps = append(steps, sv)
	}
	if err := c.addQueuePlaces(r.Context(), run, steps, unserved); err != nil {
		c.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	d := layout(tasks, c.optionalEdges(r.Context(), tasks), byTask)
	earlier := 0
	if len(events) > maxEventsShown {
		earlier = len(events) - maxEventsShown
		events = events[earlier:]
	}
	c.render(w, r, "run.html", map[string]any{
		"Run": run, "Steps": steps, "Graph": d, "HiddenElements": hidden, "EarlierEvents": earlier, "Events": events, "Refresh": !run.Status.Terminal(),
		"CSRF": c.token(w, r), "Done": r.URL.Query().Get("done"),
		"Retryable": run.Status == store.RunFailed || run.Status == store.RunCancelled,
		"Parent":    run.Parent,
	})
}

// stepView is a step as the run page shows it.
type stepView struct {
	Task      store.Task
	Class     string
	Output    string
	Truncated bool
	Events    []store.Event
	Why       string // why it is not running, when it is not
	// Children are the runs the task started (a child step, or an
	// element of a mapped one), its latest attempt's first.
	Children []store.ChildRun
	// ElementChildren are, for a mapped child step, the child runs its
	// elements' latest attempts started, up to maxElementsShown;
	// MoreElementChildren counts the others.
	ElementChildren     []store.ChildRun
	MoreElementChildren int
}

// elementChildren returns the child runs the latest attempts of mapped
// step step's elements started, in element order, up to maxElementsShown,
// and how many more there are: the completed elements are not listed on
// the page, so their step's section links their children.
func elementChildren(step string, tasks []store.Task, byTask map[string][]store.ChildRun) ([]store.ChildRun, int) {
	var out []store.ChildRun
	more := 0
	for _, t := range tasks {
		if t.Kind != store.KindElement {
			continue
		}
		if s, _, ok := store.ParseElement(t.Name); !ok || s != step {
			continue
		}
		if ks := byTask[t.Name]; len(ks) > 0 {
			if len(out) < maxElementsShown {
				out = append(out, ks[0])
			} else {
				more++
			}
		}
	}
	return out, more
}

// addQueuePlaces says, for the queued steps a live worker serves, the rate
// limit they wait for or how much of the fair queue is ahead of them.
func (c *Console) addQueuePlaces(ctx context.Context, run store.Run, steps []stepView, unserved map[string]string) error {
	if run.Status.Terminal() {
		return nil
	}
	var queued []string
	for _, sv := range steps {
		if _, no := unserved[sv.Task.Name]; sv.Task.Status == store.TaskQueued && !no {
			queued = append(queued, sv.Task.Name)
		}
	}
	if len(queued) == 0 {
		return nil
	}
	places, err := c.st.QueuePlaces(ctx, run.ID, queued)
	if err != nil {
		return err
	}
	for i := range steps {
		if p, ok := places[steps[i].Task.Name]; ok {
			steps[i].Why = queuedWhy(run.Tenant, p)
		}
	}
	return nil
}

// queuedWhy says why a queued step is not running: the rate limit it
// waits for, or what the fair queue hands out before it.
func queuedWhy(tenant string, p store.QueuePlace) string {
	if p.RateLimited != "" {
		return "queued: waiting for " + p.RateLimited + "; it enters the fair queue when it can take its tokens, holding no worker meanwhile"
	}
	if p.Ahead == 0 {
		return "queued: next in the fair queue; the next worker that serves its signature and has a free slot claims it"
	}
	more := ""
	if p.Ahead >= store.MaxQueueAhead {
		more = "at least "
	}
	mine := "none of them tenant " + tenant + "'s"
	if p.TenantAhead > 0 {
		mine = fmt.Sprintf("%d of them tenant %s's", p.TenantAhead, tenant)
	}
	return fmt.Sprintf("queued: %s%s ahead of it in the fair queue (%s); workers claim in that order, taking turns between tenants",
		more, textfmt.Count(p.Ahead, "task"), mine)
}

// optionalEdges returns the edges (child, parent) of tasks that the child
// takes as a dag.Maybe, from the recorded signature descriptions.
func (c *Console) optionalEdges(ctx context.Context, tasks []store.Task) map[[2]string]bool {
	var sigs []string
	for _, t := range tasks {
		if t.Signature != "" && t.Kind != store.KindElement {
			sigs = append(sigs, t.Signature)
		}
	}
	out := map[[2]string]bool{}
	for _, si := range c.signatureInfos(ctx, sigs, "drawing every edge as required") {
		for _, p := range si.Parents {
			if p.Optional {
				out[[2]string{si.Step, p.Name}] = true
			}
		}
	}
	return out
}

// signatureInfos returns the recorded descriptions of sigs, or none when
// the store cannot be read (logged, saying what the page does without
// them).
func (c *Console) signatureInfos(ctx context.Context, sigs []string, without string) []store.SignatureInfo {
	if len(sigs) == 0 {
		return nil
	}
	infos, err := c.st.SignatureInfos(ctx, sigs)
	if err != nil {
		c.opts.Logger.Warn("dagen console: read signatures; "+without, "err", err)
		return nil
	}
	return infos
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrRunNotFound) }

// prettyOutput indents JSON output, cut at maxOutput unless all.
func prettyOutput(b []byte, all bool) (string, bool) {
	if b == nil {
		return "", false
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		buf.Reset()
		buf.Write(b)
	}
	if !all && buf.Len() > maxOutput {
		return buf.String()[:maxOutput], true
	}
	return buf.String(), false
}

// whyNotRunning says why an unfinished step of a running run is not
// running: the parents it waits for, its backoff or sleep wake time, or
// its wait for a signal.
func whyNotRunning(run store.Run, t store.Task, tasks []store.Task) string {
	if run.Status.Terminal() {
		return ""
	}
	switch t.Status {
	case store.TaskPending:
		if run.Status == store.RunQueued {
			return "the run waits for its workflow's concurrency cap to admit it"
		}
		if t.Kind == store.KindOnFailure {
			return ""
		}
		var waits []string
		for _, p := range t.Parents {
			for _, pt := range tasks {
				if pt.Name == p && !pt.Status.Resolved() {
					waits = append(waits, fmt.Sprintf("%s (%s)", p, strings.ToLower(string(pt.Status))))
				}
			}
		}
		if len(waits) > 0 {
			return "waits for its parents: " + strings.Join(waits, ", ")
		}
	case store.TaskQueued:
		return "queued: waiting for a worker that serves its signature to claim it"
	case store.TaskBackoff:
		return "waiting out a retry delay until " + t.WakeAt.UTC().Format(time.RFC3339) + ", after: " + textfmt.FirstLine(t.Error)
	case store.TaskSleeping:
		return "sleeping until " + t.WakeAt.UTC().Format(time.RFC3339)
	case store.TaskAwaiting:
		s := "waiting for its signal"
		if !t.WakeAt.IsZero() {
			s += " until " + t.WakeAt.UTC().Format(time.RFC3339)
		}
		return s
	}
	return ""
}

// cancel cancels the run.
func (c *Console) cancel(ctx context.Context, r *http.Request) (string, error) {
	id, err := dag.ParseRunID(r.PathValue("id"))
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a run id", errBadRequest, r.PathValue("id"))
	}
	ok, err := c.st.CancelRun(ctx, id)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: the run had finished already", errBadRequest)
	}
	return "cancelled", nil
}

// retry retries the run in the form's mode.
func (c *Console) retry(ctx context.Context, r *http.Request) (string, error) {
	id, err := dag.ParseRunID(r.PathValue("id"))
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a run id", errBadRequest, r.PathValue("id"))
	}
	mode := r.PostFormValue("mode")
	if mode == "" {
		mode = string(store.RetryFailed)
	}
	rt, err := store.ParseRetryMode(mode)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errBadRequest, err)
	}
	rt.Operator = userOf(r).Name
	res, err := c.st.RetryRun(ctx, id, rt)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("retried (%s): %d steps reset", rt, len(res.Reset)), nil
}

// funcs are the templates' helpers.
func funcs(now func() time.Time) template.FuncMap {
	return template.FuncMap{
		"lower": func(v any) string { return strings.ToLower(fmt.Sprint(v)) },
		"ago": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return textfmt.Duration(now().Sub(t)) + " ago"
		},
		"took": func(a, b time.Time) string {
			if a.IsZero() || b.IsZero() {
				return "-"
			}
			return textfmt.Duration(b.Sub(a))
		},
		"stamp": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.UTC().Format("2006-01-02 15:04:05.000")
		},
		"first":  textfmt.FirstLine,
		"status": func(s any) string { return statusClass(store.TaskStatus(fmt.Sprint(s))) },
		"half":   func(n int) int { return n / 2 },
		"add":    func(a, b int) int { return a + b },
		"count":  textfmt.Count,
		"nodeW":  func() int { return nodeW },
		"nodeH":  func() int { return nodeH },
	}
}
