// Package order is the order flow of the dagen design, end to end: an
// order is validated, then either charged, held for a fraud window and
// shipped, or rejected; Finalize merges the two branches; Alert runs if the
// run fails for good. Ship is a child step (//dag:child): it runs the
// Shipment workflow of package shipping and completes with its result.
//
//	Validate ─┬─ Charge (skip=invalid, retry=3) ─┬─ FraudWindow (sleep) ─┐
//	          │                                  └───────────────────────┴─ Ship (runs Shipment) ─┐
//	          └─ Reject (skip=valid) ─────────────────────────────────────────────────────────────┴─ Finalize
//
// The steps are plain Go functions with //dag: directives; dag_gen.go is
// written by go generate (dagen) and committed. See example_test.go for the
// typed API it gives, and demo/ for a program that runs it: on Postgres it
// inserts each order into a table of its own and starts the order's run in
// the same transaction (StartTx).
package order
