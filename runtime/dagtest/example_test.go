package dagtest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/dagenhq/dagen/examples/order"
	"github.com/dagenhq/dagen/examples/shipping"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
)

// fatal stands in for the *testing.T that a test passes to dagtest.New:
// where the test would fail, it panics.
type fatal struct{}

func (fatal) Helper() {}

func (fatal) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// A charged order sleeps for a day before it ships; on the harness's fake
// clock the day passes at once.
func Example() {
	ctx := context.Background()
	h := dagtest.New(fatal{}) // in a test: dagtest.New(t)
	// Its Ship step runs workflow Shipment as a child: register both.
	if _, err := shipping.NewShipmentWorkflow(h.Engine); err != nil {
		panic(err)
	}
	wf, err := order.NewOrderWorkflow(h.Engine)
	if err != nil {
		panic(err)
	}
	run, err := wf.Start(ctx, "tenant-42", order.Order{ID: "o-1", Amount: 4200, Card: "4242"})
	if err != nil {
		panic(err)
	}

	h.RunUntilIdle(ctx) // validates, charges, and goes to sleep
	_, err = run.Wait(ctx)
	fmt.Println("blocked:", errors.Is(err, engine.ErrRunBlocked))
	at, _ := h.NextTimer(ctx)
	fmt.Println("wakes in:", at.Sub(h.Clock.Now()))

	h.Advance(ctx, order.DefaultFraudHold) // wakes it and runs the rest
	res, err := run.Wait(ctx)
	if err != nil {
		panic(err)
	}
	sum := res.Finalize.Value()
	fmt.Println(sum.Status, sum.Detail, "at", h.Clock.Now().Sub(dagtest.Epoch))
	// Output:
	// blocked: true
	// wakes in: 24h0m0s
	// shipped trk-o-1 at 24h0m0s
}
