package cli

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dagenhq/dagen/internal/analysis"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// schedulesCommands are the subcommands of dagen schedules.
var schedulesCommands = []string{"ls", "pause", "resume", "delete"}

// schedules runs dagen schedules (or dagen runs schedules): ls (the
// default), pause NAME, resume NAME, delete NAME; -workflow and -tenant
// narrow the list and pick the schedule when a name is not unique.
func (r *runsIO) schedules(args []string) int {
	sub := "ls"
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	if !slices.Contains(schedulesCommands, sub) {
		if s := analysis.Suggest(sub, schedulesCommands); s != "" {
			fmt.Fprintf(r.stderr, "dagen schedules: unknown command %q: did you mean %s?\n", sub, s)
		} else {
			fmt.Fprintf(r.stderr, "dagen schedules: unknown command %q: want %s\n", sub, strings.Join(schedulesCommands, ", "))
		}
		return ExitError
	}
	all, err := r.st.ListSchedules(r.ctx, r.f.workflow, r.f.tenant)
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen schedules: %v\n", err)
		return ExitFailure
	}
	if sub == "ls" {
		if len(args) > 0 {
			fmt.Fprintf(r.stderr, "dagen schedules ls: unexpected %q: narrow the list with -workflow and -tenant\n", args[0])
			return ExitError
		}
		return r.listSchedules(all)
	}
	if len(args) != 1 {
		fmt.Fprintf(r.stderr, "dagen schedules %s: want one schedule name (dagen schedules lists them)\n", sub)
		return ExitError
	}
	var match []store.Schedule
	var names []string
	for _, s := range all {
		names = append(names, s.Name)
		if s.Name == args[0] {
			match = append(match, s)
		}
	}
	switch {
	case len(match) == 0 && analysis.Suggest(args[0], names) != "":
		fmt.Fprintf(r.stderr, "dagen schedules %s: no schedule %q: did you mean %s?\n", sub, args[0], analysis.Suggest(args[0], names))
		return ExitFailure
	case len(match) == 0:
		fmt.Fprintf(r.stderr, "dagen schedules %s: no schedule %q (dagen schedules lists them)\n", sub, args[0])
		return ExitFailure
	case len(match) > 1:
		fmt.Fprintf(r.stderr, "dagen schedules %s: %d schedules are named %q: pick one with -workflow and -tenant\n", sub, len(match), args[0])
		return ExitFailure
	}
	ref := match[0].ScheduleRef
	switch sub {
	case "pause":
		err = r.st.PauseSchedule(r.ctx, ref, true, time.Time{})
	case "resume":
		err = engine.ResumeScheduleIn(r.ctx, r.st, ref)
	case "delete":
		err = r.st.DeleteSchedule(r.ctx, ref)
		if err == nil && match[0].Declared {
			fmt.Fprintf(r.stderr, "dagen schedules delete: %q is declared by a //dag:schedule directive: it comes back when a worker registers its workflow; delete the directive to remove it for good\n", ref.Name)
		}
	}
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen schedules %s: %v\n", sub, err)
		return ExitFailure
	}
	if r.f.json {
		printJSON(r.stdout, map[string]string{"schedule": ref.Name, "workflow": ref.Workflow, "tenant": ref.Tenant, "done": sub})
		return ExitOK
	}
	fmt.Fprintf(r.stdout, "%s: schedule %s of %s for %s\n", map[string]string{"pause": "paused", "resume": "resumed", "delete": "deleted"}[sub], ref.Name, ref.Workflow, ref.Tenant)
	return ExitOK
}

// scheduleJSON is a schedule in -json output.
type scheduleJSON struct {
	Workflow string     `json:"workflow"`
	Tenant   string     `json:"tenant"`
	Name     string     `json:"name"`
	Cron     string     `json:"cron"`
	Zone     string     `json:"zone"`
	Catchup  string     `json:"catchup"`
	Declared bool       `json:"declared"`
	Paused   bool       `json:"paused"`
	NextAt   time.Time  `json:"next_at"`
	LastAt   *time.Time `json:"last_at,omitempty"`
	LastRun  string     `json:"last_run,omitempty"`
}

func (r *runsIO) listSchedules(all []store.Schedule) int {
	if r.f.json {
		out := make([]scheduleJSON, len(all))
		for i, s := range all {
			out[i] = scheduleJSON{Workflow: s.Workflow, Tenant: s.Tenant, Name: s.Name, Cron: s.Cron, Zone: zoneName(s.Zone),
				Catchup: string(s.Catchup), Declared: s.Declared, Paused: s.Paused, NextAt: s.NextAt}
			if !s.LastAt.IsZero() {
				out[i].LastAt, out[i].LastRun = &s.LastAt, s.LastRun.String()
			}
		}
		printJSON(r.stdout, out)
		return ExitOK
	}
	if len(all) == 0 {
		fmt.Fprintln(r.stdout, "no schedules")
		return ExitOK
	}
	w := tabwriter.NewWriter(r.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "WORKFLOW\tTENANT\tNAME\tCRON\tZONE\tCATCHUP\tSTATE\tNEXT\tLAST RUN")
	for _, s := range all {
		state, next := "active", s.NextAt.UTC().Format(time.RFC3339)
		if s.Paused {
			state, next = "paused", "-"
		}
		if s.Declared {
			state += " (declared)"
		}
		last := "-"
		if !s.LastAt.IsZero() {
			last = s.LastRun.String() + " (" + s.LastAt.UTC().Format(time.RFC3339) + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Workflow, s.Tenant, s.Name, s.Cron, zoneName(s.Zone), s.Catchup, state, next, last)
	}
	_ = w.Flush()
	return ExitOK
}

func zoneName(z string) string {
	if z == "" {
		return "UTC"
	}
	return z
}
