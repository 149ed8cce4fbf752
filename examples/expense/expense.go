package expense

//go:generate go run github.com/dagenhq/dagen/cmd/dagen

import (
	"context"
	"fmt"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Expense is the input of the Expense workflow.
//
//dag:workflow
type Expense struct {
	ID       string
	Employee string
	Amount   int64 // cents
}

// Submission is what Submit records.
type Submission struct {
	ID      string
	Manager string
}

// Submit files the expense with the employee's manager.
//
//dag:step
func Submit(ctx context.Context, e Expense) (Submission, error) {
	return Submission{ID: e.ID, Manager: "manager-of-" + e.Employee}, nil
}

// Approval is the manager's answer: the payload of the signal the run
// waits for after Submit, for up to 72 hours.
//
//dag:signal after=Submit timeout=72h
type Approval struct {
	By       string
	Approved bool
	Note     string
}

// Decision is what Decide made of the approval, or of its absence.
type Decision struct {
	Approved bool
	Reason   string
}

// Decide approves the expense when the manager did; with no answer
// within 72 hours the wait is skipped and a small expense is approved
// on its own.
//
//dag:step after=Submit,Approval
func Decide(ctx context.Context, e Expense, s Submission, a dag.Maybe[Approval]) (Decision, error) {
	if ap, ok := a.Get(); ok {
		if ap.Approved {
			return Decision{Approved: true, Reason: "approved by " + ap.By}, nil
		}
		return Decision{Reason: fmt.Sprintf("rejected by %s: %s", ap.By, ap.Note)}, nil
	}
	if e.Amount <= 50_00 {
		return Decision{Approved: true, Reason: "no answer from " + s.Manager + " within 72h; small amounts pass"}, nil
	}
	return Decision{Reason: "no answer from " + s.Manager + " within 72h"}, nil
}

// Payment is a paid expense.
type Payment struct {
	ID     string
	Amount int64
}

// Pay pays an approved expense.
//
//dag:step after=Decide skip=rejected
func Pay(ctx context.Context, e Expense, d Decision) (Payment, error) {
	return Payment{ID: "pay-" + e.ID, Amount: e.Amount}, nil
}

func rejected(d Decision) bool { return !d.Approved }

// Report is the input of the Report workflow: the day it covers.
//
//dag:workflow
type Report struct {
	Day string // 2006-01-02
}

// Summary is a day's report.
type Summary struct {
	Day  string
	Text string
}

// Summarize builds the report of a day.
//
//dag:step
func Summarize(ctx context.Context, r Report) (Summary, error) {
	return Summary{Day: r.Day, Text: "expenses of " + r.Day}, nil
}

// Nightly starts a Report run at 03:00 Paris time every night, for the day
// before, for tenant finance. A slot missed while no worker ran starts one
// run, for the latest slot.
//
//dag:schedule cron="0 3 * * *" zone=Europe/Paris tenant=finance catchup=latest
func Nightly(ctx context.Context, slot time.Time) (Report, error) {
	return Report{Day: slot.AddDate(0, 0, -1).Format("2006-01-02")}, nil
}
