// Command demo runs the order workflow twice, a valid order and an invalid
// one, and prints every step's state and output, and the Shipment run the
// valid order's Ship step starts as its child; then it starts the valid
// order again, which finds the order's run by its idempotency key (key=ID)
// rather than starting another.
//
// It uses Postgres when DATABASE_URL is set (pgstore migrates the schema),
// otherwise the in-memory store. On Postgres each order is inserted into
// the demo's own table, demo_orders, and its run started in the same
// transaction (StartTx): the order and its run exist together or not at
// all, whatever fails between. The valid order's fraud window is
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
	"github.com/dagenhq/dagen/examples/shipping"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

func main() { demo.Main(run) }

func run(ctx context.Context, databaseURL string, out io.Writer) error {
	e, done, err := demo.Engine(ctx, databaseURL, out)
	if err != nil {
		return err
	}
	defer done()
	// Ship runs workflow Shipment as a child: the engine needs it too.
	if _, err := shipping.NewShipmentWorkflow(e); err != nil {
		return err
	}
	wf, err := order.NewOrderWorkflow(e)
	if err != nil {
		return err
	}
	if err := e.Start(ctx); err != nil {
		return fmt.Errorf("start engine: %w", err)
	}
	if pg, ok := e.Store().(*pgstore.Store); ok {
		if _, err := pg.Pool().Exec(ctx, ordersTable); err != nil {
			return fmt.Errorf("create demo_orders: %w", err)
		}
	}

	orders := []order.Order{
		{ID: "demo-valid", Amount: 4200, Card: "4242", FraudHold: 300 * time.Millisecond},
		{ID: "demo-invalid", Amount: -5, Card: "4242"},
	}
	var runs []dag.RunID
	for _, o := range orders {
		fmt.Fprintf(out, "\norder %s (amount %d, fraud hold %s)\n", o.ID, o.Amount, o.FraudHold)
		r, err := place(ctx, e, wf, o)
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
		if err := printChildren(ctx, out, e, r.ID()); err != nil {
			return err
		}
		if waitErr != nil {
			return fmt.Errorf("order %s: %w", o.ID, waitErr)
		}
		sum := res.Finalize.Value()
		fmt.Fprintf(out, "=> %s: %s\n", sum.Status, sum.Detail)
	}

	// The same order again: its ID is its key, so the run that has it is
	// returned, and nothing is charged twice.
	o := orders[0]
	r, err := place(ctx, e, wf, o)
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

// ordersTable is the demo's own table of orders, beside dagen's tables.
const ordersTable = `CREATE TABLE IF NOT EXISTS demo_orders (
	id        text PRIMARY KEY,
	amount    bigint NOT NULL,
	placed_at timestamptz NOT NULL DEFAULT now()
)`

// place records order o and starts its run. On Postgres both happen in one
// transaction: the row in demo_orders and the run (StartTx) commit
// together, and the run's first step starts once they have. The
// transaction holds the tenant's row of the fair queue and the order's key
// until it ends: it does nothing else. In memory there is no transaction
// to join, and the run is started alone.
func place(ctx context.Context, e *engine.Engine, wf *order.OrderWorkflow, o order.Order) (*order.OrderRun, error) {
	pg, ok := e.Store().(*pgstore.Store)
	if !ok {
		return wf.Start(ctx, "demo-tenant", o)
	}
	tx, err := pg.Pool().Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }() // after Commit, a no-op
	// An order placed again (by an earlier demo, or below) is the same
	// order: its row stays, and StartTx finds its run by its key.
	if _, err := tx.Exec(ctx, "INSERT INTO demo_orders (id, amount) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", o.ID, o.Amount); err != nil {
		return nil, fmt.Errorf("insert the order: %w", err)
	}
	r, err := wf.StartTx(ctx, tx, "demo-tenant", o)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit the order and its run: %w", err)
	}
	return r, nil
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

// printChildren prints the runs the run's child steps started: Ship runs
// a Shipment, whose result is Ship's output.
func printChildren(ctx context.Context, out io.Writer, e *engine.Engine, id dag.RunID) error {
	kids, err := e.Store().ListChildren(ctx, id)
	if err != nil {
		return fmt.Errorf("list the children of run %s: %w", id, err)
	}
	for _, k := range kids {
		res, err := e.Result(ctx, k.ID)
		if err != nil {
			return fmt.Errorf("read child run %s: %w", k.ID, err)
		}
		fmt.Fprintf(out, "  %s started child run %s of %s: %s\n", k.Task, k.ID, k.Workflow, res.Status)
		for _, name := range []string{"Pack", "BuyLabel"} {
			if t, ok := res.Tasks[name]; ok {
				fmt.Fprintf(out, "    %-10s %-10s %s\n", name, t.Status, strings.TrimSpace(string(t.Output)))
			}
		}
	}
	return nil
}
