package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dagenhq/dagen/internal/analysis"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// signal runs dagen runs signal ID NAME JSON: it sends a signal to a
// run's signal wait, as the generated Send<Type> does.
func (r *runsIO) signal(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(r.stderr, `dagen runs signal: want a run id, the wait's step name and the payload as JSON, such as: dagen runs signal 0192… Approval '{"By":"ann"}'`)
		return ExitError
	}
	id, err := dag.ParseRunID(args[0])
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen runs signal: %q is not a run id: %v\n", args[0], err)
		return ExitError
	}
	step, payload := args[1], []byte(args[2])
	tasks, err := r.st.ListTasks(r.ctx, id)
	if err != nil {
		return r.readFailed("signal", id, err)
	}
	var waits []string
	for _, t := range tasks {
		if t.Kind == store.KindSignal {
			waits = append(waits, t.Name)
		}
	}
	if !slices.Contains(waits, step) {
		switch {
		case len(waits) == 0:
			fmt.Fprintf(r.stderr, "dagen runs signal: run %s waits for no signal (its workflow has no //dag:signal)\n", id)
		case analysis.Suggest(step, waits) != "":
			fmt.Fprintf(r.stderr, "dagen runs signal: run %s has no signal wait %q: did you mean %s?\n", id, step, analysis.Suggest(step, waits))
		default:
			fmt.Fprintf(r.stderr, "dagen runs signal: run %s has no signal wait %q: its waits are %s\n", id, step, strings.Join(waits, ", "))
		}
		return ExitFailure
	}
	if !json.Valid(payload) {
		var v any
		err := json.Unmarshal(payload, &v)
		fmt.Fprintf(r.stderr, "dagen runs signal: the payload is not JSON: %v (quote it for the shell: '{\"By\":\"ann\"}')\n", err)
		return ExitError
	}
	delivered, err := r.st.SendSignal(r.ctx, id, step, payload)
	switch {
	case errors.Is(err, store.ErrSignalResolved):
		fmt.Fprintf(r.stderr, "dagen runs signal: the wait %s of run %s is resolved already (dagen runs show %s says how)\n", step, id, id)
		return ExitFailure
	case errors.Is(err, store.ErrSignalHeld):
		fmt.Fprintf(r.stderr, "dagen runs signal: a signal for %s of run %s is held already: the run uses it when it reaches the wait\n", step, id)
		return ExitFailure
	case errors.Is(err, store.ErrRunFinished):
		fmt.Fprintf(r.stderr, "dagen runs signal: run %s has finished\n", id)
		return ExitFailure
	case err != nil:
		return r.readFailed("signal", id, err)
	}
	result := "held: the run uses it when it reaches the wait"
	if delivered {
		result = "delivered: the wait is resolved"
	}
	if r.f.json {
		printJSON(r.stdout, map[string]any{"run": id.String(), "step": step, "delivered": delivered})
		return ExitOK
	}
	fmt.Fprintf(r.stdout, "signal %s of run %s %s\n", step, id, result)
	return ExitOK
}
