// Package dag holds the small vocabulary that workflow code uses: [Maybe] for
// the output of a parent that may have been skipped, [Failure] for the
// onfailure handler, [Terminal] to fail a step without retrying it, and
// [Info] to read the run, tenant and attempt a step is executing for, with
// the idempotency key that makes a step's side effects happen once. The
// examples of Maybe, Terminal and Info show each.
//
// Workflow authors import this package next to their step functions; the
// generated wiring and the runtime engine import it too, so the same types
// flow from user code through storage and back.
package dag
