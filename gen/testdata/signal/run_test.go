package signal

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// These tests check the generated definition (signal waits, schedules),
// the inputs its schedules build, and the typed handle's Send and
// CreateSchedule methods. The end-to-end tests run only on a store that
// delivers signals or keeps schedules (store.Signaler, store.Scheduler),
// and skip otherwise.

func TestDefinition(t *testing.T) {
	def := ExpenseDefinition()
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := def.Fingerprint(); got != ExpenseFingerprint {
		t.Errorf("Fingerprint() = %s, want %s", got, ExpenseFingerprint)
	}
	for i, want := range []struct {
		name    string
		kind    engine.StepKind
		timeout time.Duration
		parents string
	}{
		{"Submit", engine.KindStep, 0, ""},
		{"Approval", engine.KindSignal, 72 * time.Hour, "Submit"},
		{"Decide", engine.KindStep, 0, "Submit,Approval"},
		{"Paid", engine.KindSignal, 0, "Decide"},
		{"Refund", engine.KindSignal, 0, "Decide"},
		{"Book", engine.KindStep, 0, "Paid"},
	} {
		s := def.Steps[i]
		parents := ""
		for j, p := range s.Parents {
			if j > 0 {
				parents += ","
			}
			parents += p.Name
		}
		if s.Name != want.name || s.Kind != want.kind || s.SignalTimeout != want.timeout || parents != want.parents {
			t.Errorf("step %d: %s kind %d timeout %v after %s; want %+v", i, s.Name, s.Kind, s.SignalTimeout, parents, want)
		}
		if s.Kind == engine.KindSignal && (s.Run != nil || s.Sleep != nil || s.OutputType == "") {
			t.Errorf("signal wait %s has a func or no output type", s.Name)
		}
	}
	if n := len(def.Schedules); n != 2 {
		t.Fatalf("%d schedules, want 2", n)
	}
	for i, want := range []engine.ScheduleDef{
		{Name: "Nightly", Cron: "0 3 * * *", Zone: "Europe/Paris", Tenant: "system", Catchup: store.CatchupLatest},
		{Name: "Hourly", Cron: "@hourly"},
	} {
		got := def.Schedules[i]
		if got.Name != want.Name || got.Cron != want.Cron || got.Zone != want.Zone || got.Tenant != want.Tenant || got.Catchup != want.Catchup || got.Input == nil {
			t.Errorf("schedule %d = %+v, want %+v", i, got, want)
		}
	}
}

func TestScheduleInputs(t *testing.T) {
	ctx := context.Background()
	def := ExpenseDefinition()
	slot := time.Date(2026, time.March, 1, 2, 0, 0, 0, time.UTC)
	for i, want := range []string{"nightly-2026-03-01", "hourly-2026-03-01T02:00:00Z"} {
		b, err := def.Schedules[i].Input(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		in, err := engine.Input[Expense](engine.StepInput{Input: b})
		if err != nil || in.ID != want {
			t.Errorf("schedule %s builds %+v, %v for slot %s; want ID %s", def.Schedules[i].Name, in, err, slot, want)
		}
	}
}

// TestHandle calls Send on runs that do not exist, which fails as the
// engine says it does, and CreateSchedule, which keeps the schedule's
// input.
func TestHandle(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := NewExpenseWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	unknown := dag.RunID{1}
	for name, send := range map[string]func() error{
		"SendApproval": func() error { return wf.SendApproval(ctx, unknown, Approval{By: "ann", Approved: true}) },
		"SendPaid":     func() error { return wf.SendPaid(ctx, unknown, Payment{Cents: 100}) },
		"SendRefund":   func() error { return wf.SendRefund(ctx, unknown, Refund{Cents: 100}) },
	} {
		if err := send(); !errors.Is(err, store.ErrRunNotFound) {
			t.Errorf("%s to an unknown run: %v, want %v", name, err, store.ErrRunNotFound)
		}
	}

	spec := engine.ScheduleSpec{Name: "weekly", Tenant: "acme", Cron: "0 9 * * 1"}
	if err := wf.CreateSchedule(ctx, spec, Expense{ID: "weekly", Amount: 7}); err != nil {
		t.Fatal(err)
	}
	scheds, err := h.Engine.Schedules(ctx, "Expense", "acme")
	if err != nil || len(scheds) != 1 {
		t.Fatalf("schedules of acme: %+v, %v", scheds, err)
	}
	in, err := engine.Input[Expense](engine.StepInput{Input: scheds[0].Input})
	if err != nil || in != (Expense{ID: "weekly", Amount: 7}) {
		t.Errorf("the schedule's input is %+v, %v", in, err)
	}
}

// TestRun runs the workflow through its waits: one run gets every
// signal, one sends Paid before its wait begins and lets Approval time
// out, and a second Approval is refused.
func TestRun(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := NewExpenseWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}

	approved, err := wf.Start(ctx, "acme", Expense{ID: "e-1", Amount: 500})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle(ctx) // Submit, then waiting for Approval
	if err := wf.SendApproval(ctx, approved.ID(), Approval{By: "ann", Approved: true}); err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle(ctx) // Decide, then waiting for Paid and Refund
	if err := wf.SendApproval(ctx, approved.ID(), Approval{By: "bob"}); !errors.Is(err, store.ErrSignalResolved) {
		t.Errorf("a second Approval: %v, want %v", err, store.ErrSignalResolved)
	}
	if err := wf.SendPaid(ctx, approved.ID(), Payment{Cents: 500}); err != nil {
		t.Fatal(err)
	}
	if err := wf.SendRefund(ctx, approved.ID(), Refund{}); err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle(ctx)
	res, err := approved.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := res.Approval.Get(); !ok || a.By != "ann" || !res.Decide.Approved || res.Paid.Cents != 500 {
		t.Errorf("approved run: %+v", res)
	}
	if book, ok := res.Book.Get(); !ok || book != "e-1 paid" {
		t.Errorf("approved run booked %q, %v", book, ok)
	}

	late, err := wf.Start(ctx, "acme", Expense{ID: "e-2"})
	if err != nil {
		t.Fatal(err)
	}
	// Sent before the run reaches the wait: held, and used when it does.
	if err := wf.SendPaid(ctx, late.ID(), Payment{}); err != nil {
		t.Fatal(err)
	}
	if err := wf.SendPaid(ctx, late.ID(), Payment{Cents: 1}); !errors.Is(err, store.ErrSignalHeld) {
		t.Errorf("a second Paid while one is held: %v, want %v", err, store.ErrSignalHeld)
	}
	h.RunUntilIdle(ctx)
	h.Advance(ctx, 72*time.Hour) // Approval times out
	if err := wf.SendRefund(ctx, late.ID(), Refund{Cents: 3}); err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle(ctx)
	res, err = late.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Approval.Get(); ok || res.Decide.By != "timeout" || res.Refund.Cents != 3 {
		t.Errorf("late run: %+v", res)
	}
	if _, ok := res.Book.Get(); ok {
		t.Errorf("late run booked a payment of nothing: %+v", res)
	}
}

// TestSchedules checks that the declared schedules are registered with
// their keys and the engine's defaults, and that a slot starts a run with
// the input its func builds.
func TestSchedules(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	if _, err := NewExpenseWorkflow(h.Engine); err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle(ctx) // registers the schedules
	scheds, err := h.Engine.Schedules(ctx, "Expense", "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]store.Schedule{}
	for _, s := range scheds {
		got[s.Name] = s
	}
	if s := got["Nightly"]; s.Tenant != "system" || s.Zone != "Europe/Paris" || s.Catchup != store.CatchupLatest || !s.Declared {
		t.Errorf("Nightly: %+v", s)
	}
	if s := got["Hourly"]; s.Tenant != engine.DefaultScheduleTenant || s.Zone != "" || s.Catchup != store.CatchupLatest || !s.Declared {
		t.Errorf("Hourly: %+v", s)
	}
	slot := got["Hourly"].NextAt
	h.Advance(ctx, slot.Sub(h.Clock.Now()))
	page, err := h.Store.ListRuns(ctx, store.RunFilter{Workflow: "Expense", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 1 {
		t.Fatalf("%d runs after the first hourly slot, want 1", len(page.Runs))
	}
	run, err := h.Store.GetRun(ctx, page.Runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	in, err := engine.Input[Expense](engine.StepInput{Input: run.Input})
	if want := "hourly-" + slot.UTC().Format(time.RFC3339); err != nil || in.ID != want || run.Key != store.ScheduleKey("Hourly", slot) {
		t.Errorf("run of the hourly slot: input %+v, %v, key %s; want ID %s", in, err, run.Key, want)
	}
}
