package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

// childJSON is a child run in `runs show -json`, under the task that
// started it.
type childJSON struct {
	ID         string     `json:"id"`
	Workflow   string     `json:"workflow"`
	Status     string     `json:"status"`
	Attempt    int        `json:"attempt"` // the parent task's attempt that started it
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// parentJSON is, in `runs show -json` of a child run, the task attempt
// that started it.
type parentJSON struct {
	Run     string `json:"run"`
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
}

func childOf(c store.ChildRun) childJSON {
	j := childJSON{ID: c.ID.String(), Workflow: c.Workflow, Status: string(c.Status), Attempt: c.Attempt, CreatedAt: c.CreatedAt}
	if !c.FinishedAt.IsZero() {
		t := c.FinishedAt
		j.FinishedAt = &t
	}
	return j
}

func parentOf(p *store.ParentLink) *parentJSON {
	if p == nil {
		return nil
	}
	return &parentJSON{Run: p.Run.String(), Step: p.Task, Attempt: p.Attempt}
}

// printChildren lists, under a run's steps, the child runs its tasks
// started, in the tasks' order, each task's latest attempt first. Elements
// of a mapped child step are listed up to maxElementsShown a step, as the
// steps' table lists them; -json lists every one.
func printChildren(w io.Writer, tasks []store.Task, byTask map[string][]store.ChildRun) {
	if len(byTask) == 0 {
		return
	}
	fmt.Fprintf(w, "\nchild runs (latest attempt first; dagen runs show ID shows one):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tATTEMPT\tRUN\tWORKFLOW\tSTATUS")
	shown, hidden := map[string]int{}, map[string]int{} // element tasks, by mapped step
	var mapped []string                                 // the mapped steps with hidden children, in order
	for _, t := range tasks {
		ks := byTask[t.Name]
		if len(ks) == 0 {
			continue
		}
		if step, _, ok := store.ParseElement(t.Name); ok && t.Kind == store.KindElement {
			if shown[step]++; shown[step] > maxElementsShown {
				if hidden[step] == 0 {
					mapped = append(mapped, step)
				}
				hidden[step] += len(ks)
				continue
			}
		}
		for i, k := range ks {
			attempt := fmt.Sprint(k.Attempt)
			if i > 0 {
				attempt += " (earlier)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, attempt, k.ID, k.Workflow, k.Status)
		}
	}
	for _, step := range mapped {
		fmt.Fprintf(tw, "  …\t\t%d more child runs of %s's elements: dagen runs show -json lists them all\t\t\n", hidden[step], step)
	}
	_ = tw.Flush()
}
