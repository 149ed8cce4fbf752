// Package dagtest runs workflows deterministically in tests, the way
// net/http/httptest serves HTTP: an engine without background goroutines
// over the in-memory store, a fake clock, and helpers to run until nothing
// is left to do and to move time forward. The package example runs the
// order workflow of examples/order through its 24-hour fraud hold at once.
//
// A 24-hour sleep or a backoff schedule finishes in microseconds:
//
//	h := dagtest.New(t)
//	wf, _ := orders.NewOrderWorkflow(h.Engine)
//	run, _ := wf.Start(ctx, "tenant", orders.Order{ID: "o-1"})
//	h.RunUntilIdle(ctx)          // runs until the sleep
//	h.Advance(ctx, 24*time.Hour) // wakes it and runs the rest
//	res, err := run.Wait(ctx)
//
// Advancing the clock also fires due schedules (//dag:schedule) and ends
// signal waits whose timeout passed; NewWithClock starts the clock at a
// time of the test's choosing (a daylight saving change, say).
package dagtest
