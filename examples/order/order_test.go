package order_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dagenhq/dagen/examples/order"
	"github.com/dagenhq/dagen/examples/shipping"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestBothBranches runs a valid and an invalid order side by side on the
// in-memory store. The invalid one is rejected at once; the valid one is
// charged, then sleeps 24 hours of fake time before it ships.
func TestBothBranches(t *testing.T) {
	h := dagtest.New(t)
	bothBranches(t, h.Engine, func(d time.Duration) { h.Advance(context.Background(), d) })
}

// TestBothBranchesPostgres runs the same two orders on Postgres, in a
// schema of their own, with the store on the fake clock so the 24-hour
// sleep passes at once. It needs a server at DATABASE_URL (or
// pgtest.DefaultURL), like the other Postgres tests.
func TestBothBranchesPostgres(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, 4)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	clock := dagtest.NewClock(dagtest.Epoch)
	st, err := pgstore.New(ctx, pool, &pgstore.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(st, &engine.Config{Manual: true, WorkerID: "order-test"})
	if err != nil {
		t.Fatal(err)
	}
	bothBranches(t, e, func(d time.Duration) {
		clock.Advance(d)
		for {
			n, err := e.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				return
			}
		}
	})
}

// bothBranches drives the two orders on a manual engine; advance moves the
// store's clock by d and runs until nothing is left to do.
func bothBranches(t *testing.T, e *engine.Engine, advance func(d time.Duration)) {
	t.Helper()
	ctx := context.Background()
	// Ship runs workflow Shipment as a child: the engine needs it too.
	if _, err := shipping.NewShipmentWorkflow(e); err != nil {
		t.Fatal(err)
	}
	wf, err := order.NewOrderWorkflow(e)
	if err != nil {
		t.Fatal(err)
	}
	good, err := wf.Start(ctx, "tenant-42", order.Order{ID: "o-1", Amount: 4200, Card: "4242"})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := wf.Start(ctx, "tenant-42", order.Order{ID: "o-2", Amount: 0, Card: "4242"})
	if err != nil {
		t.Fatal(err)
	}
	advance(0)

	rejected, err := bad.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rejected.Validate.OK || rejected.Charge.Ok() || rejected.Ship.Ok() {
		t.Errorf("invalid order went down the valid branch: %+v", rejected)
	}
	if rej, ok := rejected.Reject.Get(); !ok || rej.Reason != "amount must be positive" {
		t.Errorf("Reject = %+v", rejected.Reject)
	}
	if sum := rejected.Finalize.Value(); sum.Status != "rejected" {
		t.Errorf("Finalize = %+v", sum)
	}

	// The valid order is asleep in its fraud window.
	if _, err := good.Wait(ctx); !errors.Is(err, engine.ErrRunBlocked) {
		t.Fatalf("before the window: err = %v, want ErrRunBlocked", err)
	}
	res, err := e.Result(ctx, good.ID())
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Tasks["FraudWindow"].Status; st != store.TaskSleeping {
		t.Fatalf("FraudWindow is %s", st)
	}
	advance(order.DefaultFraudHold - time.Minute)
	if _, err := good.Wait(ctx); !errors.Is(err, engine.ErrRunBlocked) {
		t.Fatalf("a minute early: err = %v, want ErrRunBlocked", err)
	}
	advance(time.Minute)

	shipped, err := good.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := shipped.Charge.Get(); !ok || r.ChargeID != "ch-o-1" || r.Amount != 4200 {
		t.Errorf("Charge = %+v", shipped.Charge)
	}
	if shipped.Reject.Ok() {
		t.Errorf("valid order was rejected: %+v", shipped.Reject)
	}
	if sum := shipped.Finalize.Value(); sum.Status != "shipped" || sum.Detail != "trk-o-1" {
		t.Errorf("Finalize = %+v", sum)
	}
}

// TestGetByID keeps only the id of a run, as a service stores it, drops
// the handle Start returned, and waits for the typed result through
// wf.Get: on the engine that started the run, and on a second engine over
// the same store, as after a restart. An unknown id is reported by Wait.
func TestGetByID(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	// Ship runs workflow Shipment as a child: the engine needs it too.
	if _, err := shipping.NewShipmentWorkflow(h.Engine); err != nil {
		t.Fatal(err)
	}
	wf, err := order.NewOrderWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	id := startID(t, wf, order.Order{ID: "o-7", Amount: 700, Card: "4242", FraudHold: time.Minute})
	h.RunUntilIdle(ctx)
	h.Advance(ctx, time.Minute)

	run := wf.Get(id)
	if run.ID() != id {
		t.Fatalf("Get(%s).ID() = %s", id, run.ID())
	}
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum := res.Finalize.Value(); sum.OrderID != "o-7" || sum.Status != "shipped" || sum.Detail != "trk-o-7" {
		t.Errorf("Finalize = %+v", sum)
	}
	if r, ok := res.Charge.Get(); !ok || r.Amount != 700 {
		t.Errorf("Charge = %+v", res.Charge)
	}

	restarted, err := engine.New(h.Store, &engine.Config{Manual: true, WorkerID: "restarted"})
	if err != nil {
		t.Fatal(err)
	}
	// Ship runs workflow Shipment as a child: the engine needs it too.
	if _, err := shipping.NewShipmentWorkflow(restarted); err != nil {
		t.Fatal(err)
	}
	wf2, err := order.NewOrderWorkflow(restarted)
	if err != nil {
		t.Fatal(err)
	}
	again, err := wf2.Get(id).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again != res {
		t.Errorf("the second engine's result %+v, the first's %+v", again, res)
	}

	unknown := dag.NewRunID()
	if _, err := wf.Get(unknown).Wait(ctx); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Wait on an unknown id: err = %v, want store.ErrRunNotFound", err)
	}
}

// TestGetUnknownIDStarted checks that Wait on an unknown id fails at once
// on a started engine too, which waits for runs differently from a manual
// one, rather than waiting for the run to appear.
func TestGetUnknownIDStarted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := engine.New(memstore.New(nil), &engine.Config{PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Ship runs workflow Shipment as a child: the engine needs it too.
	if _, err := shipping.NewShipmentWorkflow(e); err != nil {
		t.Fatal(err)
	}
	wf, err := order.NewOrderWorkflow(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	if _, err := wf.Get(dag.NewRunID()).Wait(ctx); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("Wait on an unknown id: err = %v, want store.ErrRunNotFound", err)
	}
}

// startID starts a run of o and returns only its id.
func startID(t *testing.T, wf *order.OrderWorkflow, o order.Order) dag.RunID {
	t.Helper()
	run, err := wf.Start(context.Background(), "tenant-42", o)
	if err != nil {
		t.Fatal(err)
	}
	return run.ID()
}

// TestGeneratedDefinition checks the generated definition against the
// engine's own view of it.
func TestGeneratedDefinition(t *testing.T) {
	def := order.OrderDefinition()
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := def.Fingerprint(); got != order.OrderFingerprint {
		t.Errorf("fingerprint %s, generated %s: run go generate", got, order.OrderFingerprint)
	}
	for _, s := range def.Steps {
		if s.Name == "Charge" && (s.Retry.MaxRetries != 3 || s.Retry.Backoff != time.Second || s.Timeout != 30*time.Second) {
			t.Errorf("Charge policy %+v timeout %s", s.Retry, s.Timeout)
		}
	}
}
