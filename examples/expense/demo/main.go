// Command demo runs the expense approval flow and shows its nightly
// schedule.
//
// It uses Postgres when DATABASE_URL is set (pgstore migrates the schema),
// otherwise the in-memory store. One expense waits for its approval signal
// and gets it; another gets its (rejecting) signal before it reaches the
// wait, which holds it. Then it lists the Nightly schedule, and, on a fake
// clock, moves to 03:00 Paris time to show the slot's run start. It
// generates nothing itself: `make demo` runs go generate first.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dagenhq/dagen/examples/expense"
	"github.com/dagenhq/dagen/examples/internal/demo"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/dagtest"
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
	wf, err := expense.NewExpenseWorkflow(e)
	if err != nil {
		return err
	}
	if _, err := expense.NewReportWorkflow(e); err != nil {
		return err
	}
	if err := e.Start(ctx); err != nil {
		return fmt.Errorf("start engine: %w", err)
	}
	stamp := time.Now().UTC().Format("150405.000")

	// An expense that waits for its manager.
	taxi := expense.Expense{ID: "taxi-" + stamp, Employee: "eve", Amount: 80_00}
	r, err := wf.Start(ctx, "demo-tenant", taxi)
	if err != nil {
		return err
	}
	if err := awaiting(ctx, e, r.ID(), "Approval"); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nexpense %s: submitted; the run waits for an Approval signal (it holds no worker)\n", taxi.ID)
	if err := wf.SendApproval(ctx, r.ID(), expense.Approval{By: "ann", Approved: true}); err != nil {
		return err
	}
	res, err := r.Wait(ctx)
	if err != nil {
		return err
	}
	pay, _ := res.Pay.Get()
	fmt.Fprintf(out, "expense %s: %s; paid %s (%d cents)\n", taxi.ID, res.Decide.Reason, pay.ID, pay.Amount)
	err = wf.SendApproval(ctx, r.ID(), expense.Approval{By: "ann", Approved: true})
	fmt.Fprintf(out, "a second approval is refused: %v\n", errors.Is(err, store.ErrSignalResolved))

	// An expense whose answer comes before the run reaches the wait.
	hotel := expense.Expense{ID: "hotel-" + stamp, Employee: "eve", Amount: 900_00}
	r, err = wf.Start(ctx, "demo-tenant", hotel)
	if err != nil {
		return err
	}
	if err := wf.SendApproval(ctx, r.ID(), expense.Approval{By: "bob", Note: "over the limit"}); err != nil {
		return err
	}
	res, err = r.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nexpense %s: the signal came first and was held; %s; paid: %v\n", hotel.ID, res.Decide.Reason, res.Pay.Ok())

	// The nightly schedule, registered when the worker started.
	scheds, err := e.Schedules(ctx, "Report", "")
	if err != nil {
		return err
	}
	for _, s := range scheds {
		paris, _ := time.LoadLocation(s.Zone)
		fmt.Fprintf(out, "\nschedule %s of %s for %s: cron %q in %s, next slot %s\n", s.Name, s.Workflow, s.Tenant, s.Cron, s.Zone, s.NextAt.In(paris).Format("2006-01-02 15:04 MST"))
	}
	return fakeNight(ctx, out)
}

// awaiting waits until step of run id is AWAITING its signal.
func awaiting(ctx context.Context, e *engine.Engine, id dag.RunID, step string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		res, err := e.Result(ctx, id)
		if err != nil {
			return err
		}
		if res.Tasks[step].Status == store.TaskAwaiting {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %s: %s never began to wait: %w", id, step, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// fakeNight shows the schedule fire, on dagtest's fake clock: moving it to
// 03:00 Paris time starts the slot's run.
func fakeNight(ctx context.Context, out io.Writer) error {
	var t demoTB
	h := dagtest.New(&t)
	if _, err := expense.NewReportWorkflow(h.Engine); err != nil {
		return err
	}
	h.RunUntilIdle(ctx)
	next, _ := h.Engine.Schedules(ctx, "Report", "")
	h.Clock.Advance(next[0].NextAt.Sub(h.Clock.Now()))
	h.RunUntilIdle(ctx)
	after, _ := h.Engine.Schedules(ctx, "Report", "")
	if t.err != nil {
		return t.err
	}
	res, err := h.Engine.Result(ctx, after[0].LastRun)
	if err != nil {
		return err
	}
	sum, err := engine.Output[expense.Summary](res, "Summarize")
	if err != nil {
		return err
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	fmt.Fprintf(out, "on a fake clock at %s: run %s (%s) made %q\n", h.Clock.Now().In(paris).Format("2006-01-02 15:04 MST"), res.ID, res.Status, sum.Text)
	return nil
}

// demoTB lets a dagtest harness report to the demo.
type demoTB struct{ err error }

func (t *demoTB) Helper() {}
func (t *demoTB) Fatalf(format string, args ...any) {
	if t.err == nil {
		t.err = fmt.Errorf(format, args...)
	}
}
