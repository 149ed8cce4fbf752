// Package store defines the one seam between the dagen engine and storage:
// the [Store] interface and the records that cross it.
//
// The interface is shaped for batches. A worker claims N ready tasks in one
// call and completes N results in one unit; a trigger creates a run with all
// of its tasks and enqueues its roots in one unit. Every change to a running
// task is a compare-and-set on its attempt number, so a worker whose lease
// expired cannot overwrite a newer attempt. Wake times of sleeps and retry
// delays are absolute times on the store's clock, kept in a timer table that
// any worker may fire.
//
// The store knows the graph only as names: each task lists its parents, and
// the store counts pending parents down as they finish. What a finished
// parent means for its child (run it, skip it) is decided by the engine when
// it claims the child, so every store shares one implementation of the
// semantics.
//
// Optional interfaces add what a store can do better: [Workers] (heartbeats
// instead of per-task leases), [Elector] (one leader for housekeeping),
// [Notifier] (wake idle workers), [CancelNotifier] (tell workers at once
// that a run was cancelled), [RunReader] (a run and its tasks in one
// read), [StatusReader] (a run's status without its input), [Starter] (create runs and claim their first steps for the
// creating worker in one unit), [Continuer] (store results and claim the
// steps they made ready for the same worker in one unit) and [Deploys] (the signatures workers serve,
// the tasks none serves, and what the runs in flight need of the next
// build).
//
// A result may ask for its run back (TaskResult.ReturnRun): a store that
// can read the run a completion finished in the completion's own unit
// returns it in CompletionOutcome.Finished, and the engine hands it to the
// run's waiters, which then read nothing.
//
// Two implementations exist: memstore (in memory, the embedded default) and
// pgstore (Postgres). Package storetest is the conformance suite both pass.
package store
