package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dagenhq/dagen/examples/order"
	"github.com/dagenhq/dagen/examples/shipping"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// An engine on the in-memory store needs nothing set up, and its runs last
// as long as the process. The store answers the store.Store reads too:
// here, what became of each step of a rejected order.
func ExampleNew() {
	ctx := context.Background()
	st := memstore.New(nil)
	e, err := engine.New(st, &engine.Config{PollInterval: 5 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	// Its Ship step runs workflow Shipment as a child: register both.
	if _, err := shipping.NewShipmentWorkflow(e); err != nil {
		panic(err)
	}
	wf, err := order.NewOrderWorkflow(e)
	if err != nil {
		panic(err)
	}
	if err := e.Start(ctx); err != nil {
		panic(err)
	}
	defer e.Stop(ctx)

	run, err := wf.Start(ctx, "tenant-42", order.Order{ID: "o-2", Amount: 4200}) // no card
	if err != nil {
		panic(err)
	}
	if _, err := run.Wait(ctx); err != nil {
		panic(err)
	}
	tasks, err := st.ListTasks(ctx, run.ID())
	if err != nil {
		panic(err)
	}
	for _, t := range tasks {
		if t.Kind == store.KindOnFailure {
			continue // it runs only if the run fails
		}
		if t.Status == store.TaskSkipped {
			fmt.Printf("%s %s: %s\n", t.Name, t.Status, t.Reason)
			continue
		}
		fmt.Println(t.Name, t.Status)
	}
	// Output:
	// Validate COMPLETED
	// Charge SKIPPED: skip=invalid
	// Reject COMPLETED
	// FraudWindow SKIPPED: parent Charge skipped
	// Ship SKIPPED: parent Charge skipped
	// Finalize COMPLETED
}
