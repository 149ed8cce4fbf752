package cli

import (
	"errors"
	"fmt"

	"github.com/dagenhq/dagen/internal/textfmt"
	"github.com/dagenhq/dagen/runtime/store"
)

// retry retries one finished run (dagen runs retry ID -mode m).
func (r *runsIO) retry(args []string) int {
	rt, err := store.ParseRetryMode(r.f.mode)
	if err != nil {
		fmt.Fprintf(r.stderr, "dagen runs retry: -mode: %v\n", err)
		return ExitError
	}
	rt.Operator = r.f.operator
	id, ok := r.oneRun("retry", args)
	if !ok {
		return ExitError
	}
	res, err := r.st.RetryRun(r.ctx, id, rt)
	switch {
	case errors.Is(err, store.ErrRunNotFound):
		return r.readFailed("retry", id, err)
	case errors.Is(err, store.ErrUnknownStep):
		fmt.Fprintf(r.stderr, "dagen runs retry: run %s has no step %q: dagen runs show %s lists its steps\n", id, rt.From, id)
		return ExitFailure
	case err != nil: // the store's error names the run and, when it may not be retried, why
		fmt.Fprintf(r.stderr, "dagen runs retry: %v\n", err)
		return ExitFailure
	}
	if r.f.json {
		reset, enq := res.Reset, res.Enqueued
		if reset == nil {
			reset = []string{}
		}
		if enq == nil {
			enq = []string{}
		}
		printJSON(r.stdout, struct {
			Run      string   `json:"run"`
			Mode     string   `json:"mode"`
			Operator string   `json:"operator"`
			Reset    []string `json:"reset"`
			Enqueued []string `json:"enqueued"`
		}{id.String(), rt.String(), rt.Operator, reset, enq})
		return ExitOK
	}
	fmt.Fprintf(r.stdout, "retried run %s (%s): reset %s: %s\n", id, rt, textfmt.Count(len(res.Reset), "step"), joinOr(res.Reset, "none"))
	return ExitOK
}

func joinOr(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	out := names[0]
	for _, n := range names[1:] {
		out += ", " + n
	}
	return out
}
