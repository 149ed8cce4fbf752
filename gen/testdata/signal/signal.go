// Package signal exercises signal waits and schedules: a wait after a
// step with a timeout, taken as dag.Maybe by its child; a wait without
// one, stored under name=, taken as a plain T and by a skip predicate; a
// second wait of the same payload type (through an alias), whose
// generated names follow its stored name; and two schedules, one with
// every key and one with the defaults.
package signal

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Expense is the input of the Expense workflow.
//
//dag:workflow
type Expense struct {
	ID     string
	Amount int64
}

// Submission is what Submit returns.
type Submission struct{ Ref string }

// Submit files the expense.
//
//dag:step
func Submit(ctx context.Context, e Expense) (Submission, error) {
	return Submission{Ref: "sub-" + e.ID}, nil
}

// Approval is a manager's decision. A run waits for it once Submit is
// done, for 72 hours at most: then the wait is skipped.
//
//dag:signal after=Submit timeout=72h
type Approval struct {
	By       string
	Approved bool
}

// Decision is what Decide returns.
type Decision struct {
	Approved bool
	By       string
}

// Decide approves the expense when a manager did, and rejects it when no
// one answered in time.
//
//dag:step after=Submit,Approval
func Decide(ctx context.Context, e Expense, s Submission, a dag.Maybe[Approval]) (Decision, error) {
	if v, ok := a.Get(); ok {
		return Decision{Approved: v.Approved, By: v.By}, nil
	}
	return Decision{By: "timeout"}, nil
}

// Payment is the money paid out, which the run waits for as long as it
// takes, under the stored name Paid.
//
//dag:signal after=Decide name=Paid
type Payment struct{ Cents int64 }

// Refund is a payment too, waited for on its own: the two waits carry
// one type, so their Send methods are named for their stored names.
//
//dag:signal after=Decide
type Refund = Payment

// Book books the payment, unless nothing was paid.
//
//dag:step after=Paid skip=unpaid
func Book(ctx context.Context, e Expense, p Payment) (string, error) {
	return e.ID + " paid", nil
}

func unpaid(p Payment) bool { return p.Cents == 0 }

// NightlyExpenses files the expenses of the night, at 03:00 in Paris.
//
//dag:schedule cron="0 3 * * *" tenant=system catchup=latest zone=Europe/Paris name=Nightly
func NightlyExpenses(ctx context.Context, slot time.Time) (Expense, error) {
	return Expense{ID: "nightly-" + slot.Format("2006-01-02")}, nil
}

// Hourly checks every hour, with the defaults: UTC, tenant "schedule",
// catch-up latest, stored as Hourly.
//
//dag:schedule cron=@hourly
func Hourly(ctx context.Context, slot time.Time) (Expense, error) {
	return Expense{ID: "hourly-" + slot.Format(time.RFC3339)}, nil
}
