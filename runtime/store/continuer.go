package store

import "context"

// Continuer, part of [Execution], hands the tasks a batch of results made
// ready straight to the worker that stored the results, in the same unit:
// the slots those results free run the runs' next steps without a trip
// through the ready queue (no enqueue, no claim, no wait for a poll). The
// engine stores its results through it.
type Continuer interface {
	// CompleteAndContinue applies results as CompleteTasks does and, in the
	// same unit, claims for p.Worker up to p.Limit of the steps the
	// results made ready, instead of enqueueing them: children whose last
	// parent resolved, in the order of the results that made them ready,
	// then the ready steps of capped runs admitted into the room that the
	// results' ended runs gave back, in the order of admission (not
	// onfailure tasks, retried tasks, map elements or steps that take a
	// rate limit's tokens). Only steps
	// whose signature is in p.Signatures (all when it is empty) and whose
	// run's tenant may go ahead: a tenant may when it has nothing in the
	// ready queue past the head block (its block pointer at most one past
	// the frontier, as for [Starter]), or when the head blocks (the
	// frontier's and the next, where every tenant with work queued has a
	// task) hold no other tenant's task, as the queue stood before the
	// call enqueued anything. So a tenant's runs in flight never get ahead
	// of another tenant's queued work, and a tenant alone runs its started
	// runs on before it starts new ones. A claimed step is
	// RUNNING with a new attempt and a lease of p.Lease, its QUEUED and
	// STARTED events logged, exactly as if ClaimTasks had taken it from
	// the queue; its input is left out when its run is in p.Known. The
	// others are enqueued. Outcomes count the claimed children in Enqueued
	// too: their results made them ready (an admitted run's steps, claimed
	// or enqueued, are no result's).
	CompleteAndContinue(ctx context.Context, results []TaskResult, p ClaimParams) ([]CompletionOutcome, []ClaimedTask, error)
}
