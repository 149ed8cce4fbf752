// Command demo runs the order workflow twice, a valid order and an invalid
// one, and prints every step's state and output; then it starts the valid
// order again, which finds the order's run by its idempotency key (key=ID)
// rather than starting another.
//
// It uses Postgres when DATABASE_URL is set (pgstore migrates the schema),
// otherwise the in-memory store. The valid order's fraud window is
// shortened from 24 hours to a moment through its FraudHold field, so the
// demo does not block. It generates nothing itself: `make demo` runs go
// generate first.
package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dagenhq/dagen/examples/internal/demo"
	"github.com/dagenhq/dagen/examples/order"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

func main() { demo.Main(run) }

func run(ctx context.Context, databaseURL string, out io.Writer) error {
	e, done, err := demo.Engine(ctx, databaseURL, out)
	if err != nil {
		return err
	}
	defer done()
	wf, err := order.NewOrderWorkflow(e)
	if err != nil {
		return err
	}
	if err := e.Start(ctx); err != nil {
		return fmt.Errorf("start engine: %w", err)
	}

	orders := []order.Order{
		{ID: "demo-valid", Amount: 4200, Card: "4242", FraudHold: 300 * time.Millisecond},
		{ID: "demo-invalid", Amount: -5, Card: "4242"},
	}
	var runs []dag.RunID
	for _, o := range orders {
		fmt.Fprintf(out, "\norder %s (amount %d, fraud hold %s)\n", o.ID, o.Amount, o.FraudHold)
		r, err := wf.Start(ctx, "demo-tenant", o)
		if err != nil {
			return fmt.Errorf("start order %s: %w", o.ID, err)
		}
		runs = append(runs, r.ID())
		if r.Duplicate() {
			// On a database that an earlier demo used, whose run is
			// still retained.
			fmt.Fprintf(out, "run %s (found by its key: an earlier demo started it)\n", r.ID())
		} else {
			fmt.Fprintf(out, "run %s\n", r.ID())
		}
		res, waitErr := r.Wait(ctx)
		full, err := e.Result(ctx, r.ID())
		if err != nil {
			return fmt.Errorf("read run %s: %w", r.ID(), err)
		}
		printTasks(out, full)
		if waitErr != nil {
			return fmt.Errorf("order %s: %w", o.ID, waitErr)
		}
		sum := res.Finalize.Value()
		fmt.Fprintf(out, "=> %s: %s\n", sum.Status, sum.Detail)
	}

	// The same order again: its ID is its key, so the run that has it is
	// returned, and nothing is charged twice.
	o := orders[0]
	r, err := wf.Start(ctx, "demo-tenant", o)
	if err != nil {
		return fmt.Errorf("start order %s again: %w", o.ID, err)
	}
	which, how := "same run", "duplicate"
	if r.ID() != runs[0] {
		which = "new run"
	}
	if !r.Duplicate() {
		how = "started anew"
	}
	fmt.Fprintf(out, "\norder %s again: %s %s, %s\n", o.ID, which, r.ID(), how)
	return nil
}

// printTasks prints each step of a run in definition order with its state
// and its output or skip reason.
func printTasks(out io.Writer, res *engine.RunResult) {
	fmt.Fprintf(out, "status %s\n", res.Status)
	for _, s := range order.OrderDefinition().Steps {
		t, ok := res.Tasks[s.Name]
		if !ok {
			continue
		}
		detail := string(t.Output)
		switch {
		case t.Status == store.TaskSkipped:
			detail = "(" + t.Reason + ")"
		case t.Error != "":
			detail = "error: " + t.Error
		case detail == "" && s.Kind == engine.KindSleep:
			detail = "(slept)"
		}
		fmt.Fprintf(out, "  %-12s %-10s %s\n", s.Name, t.Status, strings.TrimSpace(detail))
	}
}
