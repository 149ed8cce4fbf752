package order

//go:generate go run github.com/dagenhq/dagen/cmd/dagen

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/dagenhq/dagen/examples/shipping"
	"github.com/dagenhq/dagen/runtime/dag"
)

// DefaultFraudHold is how long a charged order waits before it ships.
const DefaultFraudHold = 24 * time.Hour

// Order is the input of the Order workflow. Its type name names the
// workflow. Its ID is the run's idempotency key: starting an order again
// while its run is retained returns that run rather than charging twice.
//
//dag:workflow key=ID
type Order struct {
	ID     string
	Amount int64 // in cents
	Card   string
	// FraudHold overrides DefaultFraudHold when positive, so demos need not
	// wait a day.
	FraudHold time.Duration
}

// Validation is the verdict of Validate.
type Validation struct {
	OK     bool
	Reason string // why not, when !OK
}

// Receipt is the output of Charge.
type Receipt struct {
	ChargeID string
	Amount   int64
}

// Rejection is the output of Reject.
type Rejection struct {
	Reason string
}

// Summary is the output of Finalize: what happened to the order.
type Summary struct {
	OrderID string
	Status  string // "shipped" or "rejected"
	Detail  string
}

// Validate checks the order.
//
//dag:step
func Validate(ctx context.Context, o Order) (Validation, error) {
	switch {
	case o.Amount <= 0:
		return Validation{Reason: "amount must be positive"}, nil
	case o.Card == "":
		return Validation{Reason: "no card"}, nil
	}
	return Validation{OK: true}, nil
}

// PaymentProvider is the rate limit of the payment provider's API, which
// takes at most 100 calls a second per card (a bucket per Card, shared by
// every worker).
//
//dag:ratelimit rate=100/s burst=10
const PaymentProvider = "payments"

// Charge charges the card of a valid order. The engine retries it up to
// three times, one second apart and doubling; each attempt takes a token
// of the payment provider's limit for the order's card.
//
//dag:step after=Validate skip=invalid retry=3 backoff=1s timeout=30s ratelimit=payments per=Card
func Charge(ctx context.Context, o Order, v Validation) (Receipt, error) {
	return Receipt{ChargeID: "ch-" + o.ID, Amount: o.Amount}, nil
}

// Reject records why an invalid order is not going anywhere.
//
//dag:step after=Validate skip=valid
func Reject(ctx context.Context, o Order, v Validation) (Rejection, error) {
	return Rejection{Reason: v.Reason}, nil
}

// FraudWindow holds a charged order before it ships. A sleep step returns
// how long (time.Duration) or until when (time.Time) to sleep; no worker
// is held meanwhile.
//
//dag:sleep after=Charge
func FraudWindow(ctx context.Context, o Order, r Receipt) (time.Duration, error) {
	if o.FraudHold > 0 {
		return o.FraudHold, nil
	}
	return DefaultFraudHold, nil
}

// Ship ships a charged order once its fraud window has passed, by running
// the Shipment workflow as a child (//dag:child): it returns the child
// run's input, the engine starts the run under this run's tenant and waits
// for it without holding a worker, and Ship completes with the run's
// result, a shipping.Label. A Shipment run that fails fails Ship, and so
// the order.
//
//dag:child after=Charge,FraudWindow
func Ship(ctx context.Context, o Order, r Receipt) (shipping.Shipment, error) {
	return shipping.Shipment{OrderID: o.ID, Items: max(1, int(o.Amount/5000))}, nil
}

// Finalize is the merge point: each parent may have been skipped, so it
// takes dag.Maybe.
//
//dag:step after=Ship,Reject
func Finalize(ctx context.Context, o Order, s dag.Maybe[shipping.Label], r dag.Maybe[Rejection]) (Summary, error) {
	if l, ok := s.Get(); ok {
		return Summary{OrderID: o.ID, Status: "shipped", Detail: l.Tracking}, nil
	}
	if rej, ok := r.Get(); ok {
		return Summary{OrderID: o.ID, Status: "rejected", Detail: rej.Reason}, nil
	}
	return Summary{}, fmt.Errorf("order %s was neither shipped nor rejected", o.ID)
}

// Alert runs once when a run of the workflow fails for good.
//
//dag:onfailure
func Alert(ctx context.Context, o Order, f dag.Failure) error {
	slog.ErrorContext(ctx, "order workflow failed", "order", o.ID, "step", f.Step, "attempt", f.Attempt, "error", f.Message)
	return nil
}

func invalid(v Validation) bool { return !v.OK }

func valid(v Validation) bool { return v.OK }
