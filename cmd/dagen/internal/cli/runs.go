package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dagenhq/dagen/internal/analysis"
	"github.com/dagenhq/dagen/internal/textfmt"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// runsCommands are the subcommands of dagen runs.
var runsCommands = []string{"ls", "show", "events", "cancel", "retry", "signal", "schedules", "tenants"}

// runsFlags are the flags of dagen runs.
type runsFlags struct {
	db, schema       string
	replica          string
	json             bool
	workflow, tenant string
	status           string
	since            time.Duration
	limit            int
	after            string
	graph            bool
	filter, yes      bool
	mode, operator   string
	children         string
}

// runsIO is what a runs subcommand works with.
type runsIO struct {
	ctx context.Context
	// st is where the subcommand reads and acts: with a replica, the
	// replicated store for listings, the primary for actions (and the
	// reads that pick what they act on).
	st             store.Store
	rep            *pgstore.Replicated // nil without a replica
	f              runsFlags
	stdin          io.Reader
	stdout, stderr io.Writer
	now            time.Time
}

// runs runs dagen runs with args (after "runs").
func runs(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f runsFlags
	fs := flag.NewFlagSet("dagen runs", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.db, "db", "", "database URL")
	fs.StringVar(&f.schema, "schema", "", "schema")
	fs.StringVar(&f.replica, "replica-db", "", "replica URL for reads")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	fs.StringVar(&f.workflow, "workflow", "", "only runs of this workflow")
	fs.StringVar(&f.tenant, "tenant", "", "only runs of this tenant")
	fs.StringVar(&f.status, "status", "", "only runs in these statuses, comma-separated")
	fs.DurationVar(&f.since, "since", 0, "only runs created this long ago or less")
	fs.IntVar(&f.limit, "limit", store.DefaultPageSize, "runs per page")
	fs.StringVar(&f.after, "after", "", "the page after this run id")
	fs.StringVar(&f.children, "children", "all", "only runs a parent task started (only), only the others (none), or both (all)")
	fs.BoolVar(&f.graph, "graph", false, "show: print the run as a Mermaid flowchart")
	fs.BoolVar(&f.filter, "filter", false, "cancel: every RUNNING run the filter flags select")
	fs.BoolVar(&f.yes, "yes", false, "cancel: do not ask before cancelling more than one run")
	fs.StringVar(&f.mode, "mode", "failed", "retry: failed, failed+downstream, from=STEP or all")
	fs.StringVar(&f.operator, "operator", os.Getenv("USER"), "retry: who retries, for the event log")
	var sf shardFlags
	addShardFlags(fs, &sf)
	sub := ""
	var ids []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, usage)
				return ExitOK
			}
			fmt.Fprintf(stderr, "dagen runs: %v\nRun 'dagen --help' for usage.\n", err)
			return ExitError
		}
		if fs.NArg() == 0 {
			break
		}
		if sub == "" {
			sub = fs.Arg(0)
		} else {
			ids = append(ids, fs.Arg(0))
		}
		args = fs.Args()[1:]
	}
	switch {
	case sub == "":
		fmt.Fprintf(stderr, "dagen runs: missing command: %s\nRun 'dagen --help' for usage.\n", strings.Join(runsCommands, ", "))
		return ExitError
	case !slices.Contains(runsCommands, sub):
		if s := analysis.Suggest(sub, runsCommands); s != "" {
			fmt.Fprintf(stderr, "dagen runs: unknown command %q: did you mean %s?\n", sub, s)
		} else {
			fmt.Fprintf(stderr, "dagen runs: unknown command %q: want %s\n", sub, strings.Join(runsCommands, ", "))
		}
		return ExitError
	}
	var st store.Store
	if sf = sf.withEnv(); sf.shards != "" && f.db == "" {
		// Every shard, as one store: lists merged by run id, counts
		// added up, a run found on its shard.
		if replicaURL(f.replica) != "" {
			fmt.Fprintf(stderr, "dagen runs %s: -replica-db reads one database: with shards, leave it out\n", sub)
			return ExitError
		}
		sharded, closeAll, err := openSharded(ctx, sf, f.schema)
		if err != nil {
			fmt.Fprintf(stderr, "dagen runs %s: %v\n", sub, err)
			return ExitError
		}
		defer closeAll()
		st = sharded
	} else {
		url, code := databaseURL(f.db, "runs "+sub, stderr)
		if code != ExitOK {
			return code
		}
		pool, err := connect(ctx, url, f.schema)
		if err != nil {
			fmt.Fprintf(stderr, "dagen runs %s: %v\n", sub, err)
			return ExitError
		}
		defer pool.Close()
		pst, err := pgstore.New(ctx, pool, nil)
		if err != nil {
			fmt.Fprintf(stderr, "dagen runs %s: %v\n", sub, err)
			return ExitError
		}
		st = pst
	}
	r := &runsIO{ctx: ctx, st: st, f: f, stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now()}
	acts := sub == "cancel" || sub == "retry" || sub == "signal" ||
		(sub == "schedules" || sub == "tenants") && len(ids) > 0 && ids[0] != "ls"
	if u := replicaURL(f.replica); u != "" {
		pst, _ := st.(*pgstore.Store) // with shards there is no replica (above)
		rep, rpool, err := replicated(pst, u, f.schema)
		if err != nil {
			fmt.Fprintf(stderr, "dagen runs %s: %v\n", sub, err)
			return ExitError
		}
		defer rpool.Close()
		r.rep = rep
		if !acts {
			r.st = rep
		}
	}
	name := "runs " + sub
	if sub == "schedules" || sub == "tenants" {
		name = strings.TrimSpace(sub + " " + strings.Join(ids[:min(len(ids), 1)], ""))
	}
	if acts {
		code := r.act(sub, ids)
		if code != ExitError {
			r.caughtUp(name)
		}
		return code
	}
	var code int
	switch sub {
	case "ls":
		code = r.ls(ids)
	case "show":
		code = r.show(ids)
	case "events":
		code = r.events(ids)
	case "tenants":
		code = r.tenants(ids)
	default:
		code = r.schedules(ids)
	}
	if code != ExitError {
		r.readSource(name, code == ExitOK && !r.f.json && !r.f.graph)
	}
	return code
}

// act runs an action subcommand, on the primary.
func (r *runsIO) act(sub string, ids []string) int {
	switch sub {
	case "retry":
		return r.retry(ids)
	case "signal":
		return r.signal(ids)
	case "schedules":
		return r.schedules(ids)
	case "tenants":
		return r.tenants(ids)
	}
	return r.cancel(ids)
}

// filter builds the run filter from the flags.
func (r *runsIO) filter(cmd string) (store.RunFilter, bool) {
	f := store.RunFilter{Workflow: r.f.workflow, Tenant: r.f.tenant, Limit: r.f.limit}
	if r.f.status != "" {
		for _, s := range strings.Split(r.f.status, ",") {
			st := store.RunStatus(strings.ToUpper(strings.TrimSpace(s)))
			if !slices.Contains(store.RunStatuses, st) {
				fmt.Fprintf(r.stderr, "dagen runs %s: unknown status %q: want queued, running, completed, failed or cancelled (comma-separated)\n", cmd, s)
				return f, false
			}
			f.Statuses = append(f.Statuses, st)
		}
	}
	if r.f.since < 0 {
		fmt.Fprintf(r.stderr, "dagen runs %s: -since %s: want a positive duration, such as -since 24h\n", cmd, r.f.since)
		return f, false
	}
	if r.f.since > 0 {
		f.CreatedFrom = r.now.Add(-r.f.since)
	}
	if r.f.limit <= 0 || r.f.limit > store.MaxPageSize {
		fmt.Fprintf(r.stderr, "dagen runs %s: -limit %d: want 1 to %d\n", cmd, r.f.limit, store.MaxPageSize)
		return f, false
	}
	switch r.f.children {
	case "all", "":
		f.Children = store.AllRuns
	case "only":
		f.Children = store.OnlyChild
	case "none":
		f.Children = store.NoChildren
	default:
		fmt.Fprintf(r.stderr, "dagen runs %s: -children %q: want all, only (the runs a parent run's step started) or none (the others)\n", cmd, r.f.children)
		return f, false
	}
	if r.f.after != "" {
		id, err := dag.ParseRunID(r.f.after)
		if err != nil {
			fmt.Fprintf(r.stderr, "dagen runs %s: -after %q: %v\n", cmd, r.f.after, err)
			return f, false
		}
		f.After = id
	}
	return f, true
}

// runJSON is a run in -json output.
type runJSON struct {
	ID         string       `json:"id"`
	Workflow   string       `json:"workflow"`
	Tenant     string       `json:"tenant"`
	Status     string       `json:"status"`
	CreatedAt  time.Time    `json:"created_at"`
	FinishedAt *time.Time   `json:"finished_at,omitempty"`
	Failure    *dag.Failure `json:"failure,omitempty"`
}

func runOf(s store.RunSummary) runJSON {
	j := runJSON{ID: s.ID.String(), Workflow: s.Workflow, Tenant: s.Tenant, Status: string(s.Status), CreatedAt: s.CreatedAt, Failure: s.Failure}
	if !s.FinishedAt.IsZero() {
		t := s.FinishedAt
		j.FinishedAt = &t
	}
	return j
}

func (r *runsIO) ls(args []string) int {
	if len(args) > 0 {
		fmt.Fprintf(r.stderr, "dagen runs ls: unexpected argument %q: filter with -workflow, -tenant, -status, -since, -children\n", args[0])
		return ExitError
	}
	f, ok := r.filter("ls")
	if !ok {
		return ExitError
	}
	page, err := r.st.ListRuns(r.ctx, f)
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen runs ls: %v\n", err)
		return ExitFailure
	}
	counts, err := r.st.CountRuns(r.ctx, f)
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen runs ls: %v\n", err)
		return ExitFailure
	}
	if r.f.json {
		out := struct {
			Runs   []runJSON      `json:"runs"`
			Counts map[string]int `json:"counts"`
			Next   string         `json:"next,omitempty"`
		}{Runs: []runJSON{}, Counts: map[string]int{}}
		for _, s := range page.Runs {
			out.Runs = append(out.Runs, runOf(s))
		}
		for st, n := range counts {
			out.Counts[string(st)] = n
		}
		if !page.Next.IsZero() {
			out.Next = page.Next.String()
		}
		printJSON(r.stdout, out)
		return ExitOK
	}
	tw := tabwriter.NewWriter(r.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKFLOW\tTENANT\tSTATUS\tAGE\tDURATION\tFAILED STEP")
	for _, s := range page.Runs {
		dur, failed := "-", ""
		if !s.FinishedAt.IsZero() {
			dur = textfmt.Duration(s.FinishedAt.Sub(s.CreatedAt))
		}
		if s.Failure != nil {
			failed = s.Failure.Step
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Workflow, s.Tenant, s.Status, textfmt.Duration(r.now.Sub(s.CreatedAt)), dur, failed)
	}
	_ = tw.Flush()
	var parts []string
	for _, st := range store.RunStatuses {
		if n := counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(string(st))))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no runs")
	}
	fmt.Fprintf(r.stdout, "\n%s\n", strings.Join(parts, ", "))
	if !page.Next.IsZero() {
		fmt.Fprintf(r.stdout, "more: add -after %s\n", page.Next)
	}
	return ExitOK
}

// oneRun parses the single run id a subcommand takes.
func (r *runsIO) oneRun(cmd string, args []string) (dag.RunID, bool) {
	if len(args) != 1 {
		fmt.Fprintf(r.stderr, "dagen runs %s: want one run id (dagen runs ls lists them)\n", cmd)
		return dag.RunID{}, false
	}
	id, err := dag.ParseRunID(args[0])
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen runs %s: %q is not a run id: %v\n", cmd, args[0], err)
		return dag.RunID{}, false
	}
	return id, true
}

// readFailed reports a store error, saying what to do for an unknown id.
func (r *runsIO) readFailed(cmd string, id dag.RunID, err error) int {
	if errors.Is(err, store.ErrRunNotFound) {
		fmt.Fprintf(r.stderr, "dagen runs %s: no run %s in this schema: check the id, -db and -schema (dagen runs ls lists runs)\n", cmd, id)
		return ExitFailure
	}
	fmt.Fprintf(r.stderr, "dagen runs %s: %v\n", cmd, err)
	return ExitFailure
}

// taskTiming is when a task's last attempt started and ended, from the
// event log.
type taskTiming struct{ started, ended time.Time }

func timings(events []store.Event) map[string]taskTiming {
	out := map[string]taskTiming{}
	for _, ev := range events {
		t := out[ev.Step]
		switch ev.Type {
		case store.EventStarted:
			t = taskTiming{started: ev.At}
		case store.EventCompleted, store.EventFailed, store.EventSkipped, store.EventCancelled, store.EventSleeping, store.EventRetrying:
			t.ended = ev.At
		}
		out[ev.Step] = t
	}
	return out
}

func (r *runsIO) show(args []string) int {
	id, ok := r.oneRun("show", args)
	if !ok {
		return ExitError
	}
	run, err := r.st.GetRun(r.ctx, id)
	if err != nil {
		return r.readFailed("show", id, err)
	}
	tasks, err := r.st.ListTasks(r.ctx, id)
	if err != nil {
		return r.readFailed("show", id, err)
	}
	events, err := r.st.ListEvents(r.ctx, id)
	if err != nil {
		return r.readFailed("show", id, err)
	}
	kids, err := r.st.ListChildren(r.ctx, id)
	if err != nil {
		return r.readFailed("show", id, err)
	}
	byTask := store.GroupChildren(kids)
	if r.f.graph {
		fmt.Fprint(r.stdout, mermaidRun(tasks, byTask))
		return ExitOK
	}
	places, unserved, err := r.queuePlaces(run, tasks)
	if err != nil {
		return r.readFailed("show", id, err)
	}
	times := timings(events)
	if r.f.json {
		type taskJSON struct {
			Name      string   `json:"name"`
			Kind      string   `json:"kind"`
			Parents   []string `json:"parents"`
			Status    string   `json:"status"`
			Attempt   int      `json:"attempt"`
			Signature string   `json:"signature"`
			Worker    string   `json:"worker,omitempty"`
			Error     string   `json:"error,omitempty"`
			Reason    string   `json:"reason,omitempty"`
			Seconds   *float64 `json:"seconds,omitempty"`
			Output    *string  `json:"output,omitempty"`
			Elements  int      `json:"elements,omitempty"` // a mapped step's, once mapped
			Element   *int     `json:"element,omitempty"`  // an element's index
			// Children are the runs the task started, its latest
			// attempt's first.
			Children []childJSON `json:"children,omitempty"`
			// Queue is where a queued task a live worker serves stands.
			Queue *queueJSON `json:"queue,omitempty"`
		}
		out := struct {
			runJSON
			Parent *parentJSON `json:"parent,omitempty"` // a child run's
			Tasks  []taskJSON  `json:"tasks"`
		}{runJSON: runOf(store.RunSummary{ID: run.ID, Workflow: run.Workflow, Tenant: run.Tenant, Status: run.Status,
			CreatedAt: run.CreatedAt, FinishedAt: run.FinishedAt, Failure: run.Failure}), Parent: parentOf(run.Parent)}
		for _, t := range tasks {
			tj := taskJSON{Name: t.Name, Kind: string(t.Kind), Parents: t.Parents, Status: string(t.Status), Attempt: t.Attempt,
				Signature: t.Signature, Worker: t.Worker, Error: t.Error, Reason: t.Reason}
			if tm := times[t.Name]; !tm.started.IsZero() && !tm.ended.IsZero() {
				s := tm.ended.Sub(tm.started).Seconds()
				tj.Seconds = &s
			}
			if t.Output != nil {
				o := string(t.Output)
				tj.Output = &o
			}
			if tj.Parents == nil {
				tj.Parents = []string{}
			}
			tj.Elements = t.Elements
			if t.Kind == store.KindElement {
				tj.Element = &t.Element
			}
			for _, k := range byTask[t.Name] {
				tj.Children = append(tj.Children, childOf(k))
			}
			if p, ok := places[t.Name]; ok {
				tj.Queue = &queueJSON{Ahead: p.Ahead, TenantAhead: p.TenantAhead, RateLimited: p.RateLimited}
			}
			out.Tasks = append(out.Tasks, tj)
		}
		printJSON(r.stdout, out)
		return ExitOK
	}
	fmt.Fprintf(r.stdout, "run %s\nworkflow %s, tenant %s: %s\ncreated %s", run.ID, run.Workflow, run.Tenant, run.Status, run.CreatedAt.Local().Format(time.DateTime))
	if !run.FinishedAt.IsZero() {
		fmt.Fprintf(r.stdout, ", finished after %s", textfmt.Duration(run.FinishedAt.Sub(run.CreatedAt)))
	}
	fmt.Fprintln(r.stdout)
	if p := run.Parent; p != nil {
		fmt.Fprintf(r.stdout, "parent: %s step %s (attempt %d)\n", p.Run, p.Task, p.Attempt)
	}
	if run.Status == store.RunQueued {
		fmt.Fprintf(r.stdout, "queued: waiting for its workflow's concurrency cap%s to admit it\n", capOf(run))
	}
	if !run.Deadline.IsZero() && !run.Status.Terminal() {
		fmt.Fprintf(r.stdout, "deadline %s (in %s)\n", run.Deadline.Local().Format(time.DateTime), textfmt.Duration(run.Deadline.Sub(r.now)))
	}
	switch {
	case run.Failure != nil && run.Failure.TimedOut():
		fmt.Fprintf(r.stdout, "failed: %s\n", run.Failure.Message)
	case run.Failure != nil:
		fmt.Fprintf(r.stdout, "failed: step %s, attempt %d: %s\n", run.Failure.Step, run.Failure.Attempt, textfmt.FirstLine(run.Failure.Message))
	}
	fmt.Fprintln(r.stdout)
	tw := tabwriter.NewWriter(r.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tAFTER\tSTATUS\tATTEMPTS\tDURATION\tERROR OR REASON")
	progress := mapProgress(tasks)
	shown := map[string]int{} // elements listed, by mapped step
	for _, t := range tasks {
		if t.Kind == store.KindOnFailure && t.Status == store.TaskPending {
			continue // the run did not fail: its handler never ran
		}
		if t.Kind == store.KindElement {
			// Elements that completed are counted on their step's row;
			// the others are listed, up to a few a step.
			step, _, _ := store.ParseElement(t.Name)
			if t.Status == store.TaskCompleted {
				continue
			}
			if shown[step]++; shown[step] > maxElementsShown {
				if shown[step] == maxElementsShown+1 {
					rest := progress[step].total - progress[step].done - maxElementsShown
					fmt.Fprintf(tw, "  …\t\t\t\t\t%d more elements not completed: dagen runs show -json lists them all\n", rest)
				}
				continue
			}
		}
		dur := "-"
		if tm := times[t.Name]; !tm.started.IsZero() && !tm.ended.IsZero() {
			dur = textfmt.Duration(tm.ended.Sub(tm.started))
		}
		why := t.Reason
		if t.Error != "" {
			why = t.Error
		}
		after := strings.Join(t.Parents, ",")
		if after == "" {
			after = "-"
		}
		name, status := t.Name, string(t.Status)
		if t.Kind == store.KindElement {
			name, after = "  "+name, "-"
		}
		if p, ok := progress[t.Name]; ok && t.Kind == store.KindMap {
			status += fmt.Sprintf(" (%d of %d elements done)", p.done, p.total)
		}
		if k, ok := store.CurrentChild(t, byTask); ok && t.Status == store.TaskAwaiting {
			why = fmt.Sprintf("waiting for its child run %s (%s, %s)", k.ID, k.Workflow, k.Status)
		} else if t.Status == store.TaskAwaiting {
			// A signal wait: its Reason is what it is skipped with later.
			why = "waiting for its signal (dagen runs signal " + run.ID.String() + " " + t.Name + " JSON)"
			if !t.WakeAt.IsZero() {
				why += fmt.Sprintf(" until %s (in %s)", t.WakeAt.Local().Format(time.DateTime), textfmt.Duration(t.WakeAt.Sub(r.now)))
			}
		} else if sig, ok := unserved[t.Name]; ok {
			why = "queued, but no live worker serves its signature " + sig + ": deploy code that has this step as it is (dagen check -db says what changed)"
		} else if p, ok := places[t.Name]; ok {
			why = queuedWhy(run.Tenant, p)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", name, after, status, t.Attempt, dur, textfmt.FirstLine(why))
	}
	_ = tw.Flush()
	printChildren(r.stdout, tasks, byTask)
	return ExitOK
}

// maxElementsShown is how many unfinished elements of a mapped step
// `runs show` lists.
const maxElementsShown = 10

// elementProgress is how many of a mapped step's elements completed.
type elementProgress struct{ done, total int }

// mapProgress returns, by mapped step, how many of its elements completed.
func mapProgress(tasks []store.Task) map[string]elementProgress {
	out := map[string]elementProgress{}
	for _, t := range tasks {
		if t.Kind == store.KindMap && t.Elements > 0 {
			out[t.Name] = elementProgress{total: t.Elements}
		}
	}
	for _, t := range tasks {
		if t.Kind != store.KindElement || t.Status != store.TaskCompleted {
			continue
		}
		step, i, _ := store.ParseElement(t.Name)
		if p, ok := out[step]; ok && i < p.total {
			p.done++
			out[step] = p
		}
	}
	return out
}

// mermaidRun draws a run's tasks as a Mermaid flowchart, each step
// coloured by its status; a child step is labelled with the workflow its
// child runs are of (byTask), once it started one.
func mermaidRun(tasks []store.Task, byTask map[string][]store.ChildRun) string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	progress := mapProgress(tasks)
	tasks = slices.DeleteFunc(slices.Clone(tasks), func(t store.Task) bool { return t.Kind == store.KindElement })
	ids := map[string]string{}
	for i, t := range tasks {
		ids[t.Name] = fmt.Sprintf("t%d", i)
	}
	for _, t := range tasks {
		label := t.Name
		switch t.Kind {
		case store.KindSleep:
			label += " (sleep)"
		case store.KindSignal:
			label += " (signal)"
		case store.KindChild:
			if ks := byTask[t.Name]; len(ks) > 0 {
				label += " (runs " + ks[0].Workflow + ")"
			} else {
				label += " (child)"
			}
		case store.KindMap:
			if p, ok := progress[t.Name]; ok {
				label += fmt.Sprintf(" (each: %d of %d)", p.done, p.total)
			} else {
				label += " (each)"
			}
		}
		fmt.Fprintf(&b, "    %s[%q]:::%s\n", ids[t.Name], label+" · "+strings.ToLower(string(t.Status)), strings.ToLower(string(t.Status)))
	}
	for _, t := range tasks {
		for _, p := range t.Parents {
			fmt.Fprintf(&b, "    %s --> %s\n", ids[p], ids[t.Name])
		}
	}
	for _, c := range []struct{ status, fill string }{
		{"pending", "#eeeeee"}, {"queued", "#dde7f5"}, {"running", "#9ec5fe"}, {"sleeping", "#d8cff5"},
		{"backoff", "#ffe69c"}, {"mapping", "#9ec5fe"}, {"completed", "#a3cfbb"}, {"skipped", "#f8f9fa,stroke-dasharray: 4 4"},
		{"failed", "#f1aeb5"}, {"cancelled", "#ced4da"},
	} {
		fmt.Fprintf(&b, "    classDef %s fill:%s\n", c.status, c.fill)
	}
	return b.String()
}

func (r *runsIO) events(args []string) int {
	id, ok := r.oneRun("events", args)
	if !ok {
		return ExitError
	}
	if _, err := r.st.GetRun(r.ctx, id); err != nil {
		return r.readFailed("events", id, err)
	}
	events, err := r.st.ListEvents(r.ctx, id)
	if err != nil {
		return r.readFailed("events", id, err)
	}
	if r.f.json {
		type eventJSON struct {
			At      time.Time `json:"at"`
			Step    string    `json:"step"`
			Type    string    `json:"type"`
			Attempt int       `json:"attempt"`
			Detail  string    `json:"detail,omitempty"`
		}
		out := []eventJSON{}
		for _, ev := range events {
			out = append(out, eventJSON{At: ev.At, Step: ev.Step, Type: string(ev.Type), Attempt: ev.Attempt, Detail: ev.Detail})
		}
		printJSON(r.stdout, out)
		return ExitOK
	}
	tw := tabwriter.NewWriter(r.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tSTEP\tEVENT\tATTEMPT\tDETAIL")
	for _, ev := range events {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", ev.At.Local().Format("2006-01-02 15:04:05.000"), ev.Step, ev.Type, ev.Attempt, textfmt.FirstLine(ev.Detail))
	}
	_ = tw.Flush()
	return ExitOK
}

func (r *runsIO) cancel(args []string) int {
	if r.f.filter {
		if len(args) > 0 {
			fmt.Fprintf(r.stderr, "dagen runs cancel: give run ids or -filter with filter flags, not both\n")
			return ExitError
		}
		return r.cancelFilter()
	}
	if len(args) == 0 {
		fmt.Fprintf(r.stderr, "dagen runs cancel: want run ids, or -filter with -workflow, -tenant, -since\n")
		return ExitError
	}
	var ids []dag.RunID
	for _, a := range args {
		id, err := dag.ParseRunID(a)
		if err != nil {
			fmt.Fprintf(r.stderr, "dagen runs cancel: %q is not a run id: %v\n", a, err)
			return ExitError
		}
		ids = append(ids, id)
	}
	if len(ids) > 1 && !r.confirm(fmt.Sprintf("cancel %d runs?", len(ids))) {
		fmt.Fprintln(r.stderr, "dagen runs cancel: nothing cancelled")
		return ExitFailure
	}
	code := ExitOK
	var cancelled []string
	for _, id := range ids {
		ok, err := r.st.CancelRun(r.ctx, id)
		switch {
		case errors.Is(err, store.ErrRunNotFound):
			code = r.readFailed("cancel", id, err)
		case err != nil:
			fmt.Fprintf(r.stderr, "dagen runs cancel: run %s: %v\n", id, err)
			code = ExitFailure
		case !ok:
			fmt.Fprintf(r.stderr, "dagen runs cancel: run %s had finished: nothing to cancel\n", id)
		default:
			cancelled = append(cancelled, id.String())
		}
	}
	r.printCancelled(cancelled, len(cancelled))
	return code
}

func (r *runsIO) cancelFilter() int {
	f, ok := r.filter("cancel")
	if !ok {
		return ExitError
	}
	if f.Workflow == "" && f.Tenant == "" && f.CreatedFrom.IsZero() && !r.f.yes {
		fmt.Fprintf(r.stderr, "dagen runs cancel -filter: no filter given: that is every running run; add -workflow, -tenant or -since, or -yes to mean it\n")
		return ExitError
	}
	f.Statuses = []store.RunStatus{store.RunQueued, store.RunRunning}
	counts, err := r.st.CountRuns(r.ctx, f)
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen runs cancel: %v\n", err)
		return ExitFailure
	}
	n := counts[store.RunQueued] + counts[store.RunRunning]
	if n == 0 {
		r.printCancelled(nil, 0)
		return ExitOK
	}
	if n > 1 && !r.confirm(fmt.Sprintf("cancel %d running runs?", n)) {
		fmt.Fprintln(r.stderr, "dagen runs cancel: nothing cancelled")
		return ExitFailure
	}
	total := 0
	for {
		k, err := r.st.CancelRuns(r.ctx, f, 500)
		total += k
		if err != nil {
			fmt.Fprintf(r.stderr, "dagen runs cancel: after %d runs: %v\n", total, err)
			return ExitFailure
		}
		if k == 0 {
			break
		}
	}
	r.printCancelled(nil, total)
	return ExitOK
}

func (r *runsIO) printCancelled(ids []string, n int) {
	if r.f.json {
		if ids == nil {
			ids = []string{}
		}
		printJSON(r.stdout, struct {
			Cancelled int      `json:"cancelled"`
			Runs      []string `json:"runs,omitempty"`
		}{n, ids})
		return
	}
	fmt.Fprintf(r.stdout, "cancelled %s\n", textfmt.Count(n, "run"))
}

// confirm asks on stdout and reads the answer from stdin, unless -yes.
func (r *runsIO) confirm(question string) bool {
	if r.f.yes {
		return true
	}
	fmt.Fprintf(r.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(r.stdin).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}

// capOf names the concurrency key a capped run waits for, if it has one.
func capOf(run store.Run) string {
	if run.ConcurrencyKey == "" {
		return ""
	}
	return fmt.Sprintf(" (key %q)", run.ConcurrencyKey)
}

// queueJSON is where a queued task stands, in -json output.
type queueJSON struct {
	// Ahead and TenantAhead count the tasks the fair queue hands out
	// before it, of every tenant and of its own (up to
	// store.MaxQueueAhead); zero when RateLimited is set.
	Ahead       int `json:"ahead"`
	TenantAhead int `json:"tenant_ahead"`
	// RateLimited says which rate limit's tokens it waits for before it
	// enters the fair queue.
	RateLimited string `json:"rate_limited,omitempty"`
}

// queuePlaces returns, for an unfinished run, where its queued tasks that
// a live worker serves stand (the rate limit they wait for, or the fair
// queue ahead of them), and the signatures of the queued tasks no live
// worker serves, by task name.
func (r *runsIO) queuePlaces(run store.Run, tasks []store.Task) (map[string]store.QueuePlace, map[string]string, error) {
	if run.Status.Terminal() {
		return nil, nil, nil
	}
	us, err := r.st.Unserved(r.ctx, run.ID)
	if err != nil {
		return nil, nil, err
	}
	unserved := map[string]string{}
	for _, u := range us {
		unserved[u.Step] = u.Signature
	}
	var queued []string
	for _, t := range tasks {
		if _, no := unserved[t.Name]; t.Status == store.TaskQueued && !no {
			queued = append(queued, t.Name)
		}
	}
	if len(queued) == 0 {
		return nil, unserved, nil
	}
	places, err := r.st.QueuePlaces(r.ctx, run.ID, queued)
	if err != nil {
		return nil, nil, err
	}
	return places, unserved, nil
}

// queuedWhy says why a queued task is not running: the rate limit whose
// tokens it waits for, or what the fair queue hands out before it.
func queuedWhy(tenant string, p store.QueuePlace) string {
	switch {
	case p.RateLimited != "":
		return "waiting for " + p.RateLimited
	case p.Ahead == 0:
		return "queued: next in the fair queue"
	}
	more := ""
	if p.Ahead >= store.MaxQueueAhead {
		more = "at least "
	}
	return fmt.Sprintf("queued: %s%s ahead in the fair queue (%d of tenant %s)", more, textfmt.Count(p.Ahead, "task"), p.TenantAhead, tenant)
}
