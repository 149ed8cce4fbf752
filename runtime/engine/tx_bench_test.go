package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/engine"
)

// BenchmarkTriggerTx compares starting runs with Trigger (the store's own
// transaction, shared by concurrent calls) and with TriggerTx in a
// transaction of the caller's that does nothing else (BEGIN, the trigger,
// COMMIT), from one caller and from 16 at once, all for one tenant or each
// caller for a tenant of its own. The runs are not executed (no worker is
// started), as in the bench's trigger workload; runs/s is the figure.
//
// TriggerTx's callers of one tenant take turns: each holds the tenant's
// row of the fair queue from its trigger to its commit (store.TxTriggers).
//
//	go test ./runtime/engine/ -run '^$' -bench BenchmarkTriggerTx -benchtime 3000x
func BenchmarkTriggerTx(b *testing.B) {
	for _, mode := range []string{"Trigger", "TriggerTx"} {
		for _, c := range []struct {
			callers int
			tenants bool // a tenant for each caller
		}{{1, false}, {16, false}, {16, true}} {
			callers := c.callers
			name := fmt.Sprintf("%s/callers=%d", mode, callers)
			if c.tenants {
				name += "/tenants=16"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				pool, st := benchStore(b, 32)
				e, err := engine.New(st, nil)
				if err != nil {
					b.Fatal(err)
				}
				def := txDef(0, nil, new(atomic.Int64))
				def.Key, def.Timeout = nil, 0
				if err := e.Register(def); err != nil {
					b.Fatal(err)
				}
				start := func(caller, i int) error {
					in := keyedOrder{ID: fmt.Sprint(i), Amount: i}
					tenant := "acme"
					if c.tenants {
						tenant = fmt.Sprint("tenant-", caller)
					}
					if mode == "Trigger" {
						_, err := e.Trigger(ctx, "order", tenant, in)
						return err
					}
					tx, err := pool.Begin(ctx)
					if err != nil {
						return err
					}
					defer func() { _ = tx.Rollback(ctx) }()
					if _, err := e.TriggerTx(ctx, tx, "order", tenant, in); err != nil {
						return err
					}
					return tx.Commit(ctx)
				}
				for caller := range callers { // the first run makes its range of the history tables, and the tenants' rows
					if err := start(caller, -1-caller); err != nil {
						b.Fatal(err)
					}
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, callers)
				b.ResetTimer()
				began := time.Now()
				for caller := range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							if err := start(caller, int(i)); err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(began)
				b.StopTimer()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
			})
		}
	}
}
