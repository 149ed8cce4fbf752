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
// semantics. What a batch of outcomes does to its runs (which tasks end,
// which runs fail or complete, what is cancelled or queued again, which
// events are logged and in what order) is decided once too, by a package
// internal to the stores that both call (runtime/store/internal/transition):
// a store only loads what a batch needs and writes what it decided.
//
// A [Store] is three facets, every one required: [Execution], the
// workers' hot path (claims and completions, runs started and steps
// continued on the worker that made them ready, reads, notifications,
// heartbeats, housekeeping); [Admin], what operators see and do (runs
// listed, cancelled and retried, the workers and the backlog, what a
// deploy would strand); and [Triggers], what moves runs from outside
// (schedules and signals). Each facet is made of small interfaces named
// for what they do ([Starter], [Continuer], [Workers], [Deploys],
// [Scheduler] and the others), which document the contracts. Callers
// never ask a store what it can do, so no path is taken only by stores
// that lack something, and a wrapper that embeds a Store keeps it all.
//
// Leader election ([Elector]) is the one optional part: a store shared by
// many processes elects the one that does housekeeping, and a store that
// one process owns has no one to elect among, so every worker leads.
//
// A result may ask for its run back (TaskResult.ReturnRun): a store that
// can read the run a completion finished in the completion's own unit
// returns it in CompletionOutcome.Finished, and the engine hands it to the
// run's waiters, which then read nothing.
//
// Two implementations exist: memstore (in memory, the embedded default) and
// pgstore (Postgres). Package storetest is the conformance suite both pass.
package store
