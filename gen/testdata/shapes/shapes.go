// Package shapes exercises every step shape: stored names, retry
// policies, predicates of each form, a step without output, a sleep until
// a time, and a merge with an optional parent next to a no-value parent.
package shapes

import (
	"context"
	"errors"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Signup is the workflow input; the workflow is stored as "signup".
//
//dag:workflow name="signup"
type Signup struct {
	Email   string
	Plan    string
	Trial   bool
	NudgeAt time.Time
}

// Account is a created account.
type Account struct{ ID string }

// Bill is what a paid plan costs.
type Bill struct {
	Tier  string
	Cents int
}

// CreateAccount creates the account.
//
//dag:step name="create-account" retry=2 backoff=250ms maxbackoff=1s timeout=1m30s
func CreateAccount(ctx context.Context, s Signup) (Account, error) {
	if s.Email == "" {
		return Account{}, dag.Terminal(errors.New("no email"))
	}
	return Account{ID: "acct-" + s.Email}, nil
}

// Charge bills paid plans that are not on trial.
//
//dag:step after=CreateAccount skip=isFree,onTrial
func Charge(ctx context.Context, s Signup, a Account) (Bill, error) {
	return Bill{Tier: s.Plan, Cents: 900}, nil
}

// SendWelcome has no output: it orders the graph and binds nothing.
//
//dag:step after=CreateAccount
func SendWelcome(ctx context.Context, s Signup, a Account) error { return nil }

// Nudge sleeps until a time in the input.
//
//dag:sleep after=SendWelcome
func Nudge(ctx context.Context, s Signup) (time.Time, error) { return s.NudgeAt, nil }

// Summarize runs after the nudge whether or not Charge ran.
//
//dag:step after=Charge,Nudge
func Summarize(ctx context.Context, s Signup, b dag.Maybe[Bill]) (string, error) {
	if bill, ok := b.Get(); ok {
		return s.Email + " pays for " + bill.Tier, nil
	}
	return s.Email + " pays nothing yet", nil
}

func isFree(s Signup) bool { return s.Plan == "free" }

func onTrial(ctx context.Context, s Signup, a Account) (bool, error) {
	if a.ID == "" {
		return false, errors.New("no account")
	}
	return s.Trial, nil
}
