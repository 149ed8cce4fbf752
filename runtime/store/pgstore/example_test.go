package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/examples/order"
	"github.com/dagenhq/dagen/examples/shipping"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// Open connects, migrates the schema and returns a store that owns its
// pool. Every worker process that opens the same database shares the work.
func ExampleOpen() {
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

	res, err := wf.Run(ctx, "tenant-42", order.Order{ID: "o-1", Amount: 4200, Card: "4242"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Finalize.Value().Status)
}

// A worker behind PgBouncer in transaction mode, with a direct URL for its
// one LISTEN connection, and every host of a primary that fails over:
// OpenConfig finds the pooler (and prepares no named statements through
// it), and the session URL brings notifications of new work and of
// cancellations.
func ExampleOpenConfig() {
	ctx := context.Background()
	st, err := pgstore.OpenConfig(ctx,
		"postgres://dagen@pgbouncer:6432/app?pool_max_conns=8",
		&pgstore.Config{
			SessionURL: "postgres://dagen@db1:5432,db2:5432/app?target_session_attrs=read-write",
		})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	e, err := engine.New(st, &engine.Config{Concurrency: 64})
	if err != nil {
		panic(err)
	}
	if err := e.Start(ctx); err != nil {
		panic(err)
	}
	defer e.Stop(ctx)
}

// A worker process on a pool of its own: migrate the pool, then wrap it.
// The pool stays the caller's: Close gives up the store's leadership but
// leaves the pool open.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	if err := pgstore.Migrate(ctx, pool); err != nil {
		panic(err)
	}
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	e, err := engine.New(st, &engine.Config{WorkerID: "worker-1"})
	if err != nil {
		panic(err)
	}
	if _, err := shipping.NewShipmentWorkflow(e); err != nil { // Order's Ship runs it as a child
		panic(err)
	}
	if _, err := order.NewOrderWorkflow(e); err != nil {
		panic(err)
	}
	if err := e.Start(ctx); err != nil {
		panic(err)
	}

	// Work until interrupted, then let the steps in flight finish.
	sig, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	<-sig.Done()
	if err := e.Stop(ctx); err != nil {
		panic(err)
	}
}

// A store refuses a schema at another version than its dagen needs, and
// says what to run. MigrationStatus reads a schema's Status from the
// database; this one, of a schema not migrated yet, is made by hand.
func ExampleStatus_Err() {
	st := pgstore.Status{Schema: "public", Current: 0, Latest: 13}
	err := st.Err()
	fmt.Println(errors.Is(err, pgstore.ErrSchemaVersion))
	fmt.Println(err)
	// Output:
	// true
	// pgstore: schema "public" is not migrated (version 0), this dagen needs version 13: run "dagen migrate up" (or pgstore.Migrate) first
}
