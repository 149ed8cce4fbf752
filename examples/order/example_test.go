package order_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dagenhq/dagen/examples/order"
	"github.com/dagenhq/dagen/examples/shipping"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// The generated handle runs the workflow with typed input and output.
// FraudHold shortens the 24-hour sleep so the example finishes at once.
func Example() {
	ctx := context.Background()
	e, err := engine.New(memstore.New(nil), &engine.Config{PollInterval: 5 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	// Ship runs workflow Shipment as a child: the engine needs it too.
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

	for _, o := range []order.Order{
		{ID: "o-1", Amount: 4200, Card: "4242", FraudHold: time.Millisecond},
		{ID: "o-2", Amount: 4200},
	} {
		res, err := wf.Run(ctx, "tenant-42", o)
		if err != nil {
			panic(err)
		}
		sum := res.Finalize.Value()
		fmt.Printf("%s: %s (%s), charged: %v\n", sum.OrderID, sum.Status, sum.Detail, res.Charge.Ok())
	}
	// Output:
	// o-1: shipped (trk-o-1), charged: true
	// o-2: rejected (no card), charged: false
}

// A service that keeps a run's id, not its handle, gets a typed handle
// back with Get and waits on it.
func ExampleOrderWorkflow_Get() {
	ctx := context.Background()
	e, err := engine.New(memstore.New(nil), &engine.Config{PollInterval: 5 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	// Ship runs workflow Shipment as a child: the engine needs it too.
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

	run, err := wf.Start(ctx, "tenant-42", order.Order{ID: "o-3", Amount: 1500, Card: "4242", FraudHold: time.Millisecond})
	if err != nil {
		panic(err)
	}
	id := run.ID() // stored, say, with the order

	res, err := wf.Get(id).Wait(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Finalize.Value().Status, res.Finalize.Value().Detail)
	// Output: shipped trk-o-3
}

// Order's ID is its idempotency key (//dag:workflow key=ID): starting an
// order again while its run is retained returns that run, and Duplicate
// says so. engine.WithKey sets a key of the caller's choosing instead.
func ExampleOrderRun_Duplicate() {
	ctx := context.Background()
	e, err := engine.New(memstore.New(nil), &engine.Config{PollInterval: 5 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	// Ship runs workflow Shipment as a child: the engine needs it too.
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

	o := order.Order{ID: "o-4", Amount: 1500, Card: "4242", FraudHold: time.Millisecond}
	first, err := wf.Start(ctx, "tenant-42", o)
	if err != nil {
		panic(err)
	}
	again, err := wf.Start(ctx, "tenant-42", o) // a retried request, say
	if err != nil {
		panic(err)
	}
	fmt.Println(again.ID() == first.ID(), first.Duplicate(), again.Duplicate())

	other, err := wf.Start(ctx, "tenant-42", o, engine.WithKey("o-4-resent"))
	if err != nil {
		panic(err)
	}
	fmt.Println(other.ID() == first.ID(), other.Duplicate())
	for _, r := range []*order.OrderRun{first, other} {
		if _, err := r.Wait(ctx); err != nil {
			panic(err)
		}
	}
	// Output:
	// true false true
	// false false
}

// StartTx starts the order's run in the transaction that inserts the
// order: both commit, or neither. It needs a Postgres store (pgstore);
// the transaction is on the store's database, here on the store's own
// pool. Keep it short: until it ends it holds the tenant's row of the
// fair queue and the order's key.
func ExampleOrderWorkflow_StartTx() {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	e, err := engine.New(st, nil)
	if err != nil {
		panic(err)
	}
	// Ship runs workflow Shipment as a child: the engine needs it too.
	if _, err := shipping.NewShipmentWorkflow(e); err != nil {
		panic(err)
	}
	wf, err := order.NewOrderWorkflow(e)
	if err != nil {
		panic(err)
	}
	o := order.Order{ID: "o-1", Amount: 4200, Card: "4242"}

	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		panic(err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	if _, err := tx.Exec(ctx, "INSERT INTO orders (id, amount) VALUES ($1, $2)", o.ID, o.Amount); err != nil {
		panic(err)
	}
	run, err := wf.StartTx(ctx, tx, "tenant-42", o)
	if err != nil {
		panic(err)
	}
	if err := tx.Commit(ctx); err != nil {
		panic(err) // neither the order nor its run exists
	}
	fmt.Println("order and run", run.ID(), "committed")
}
