// Package engine runs dagen workflows: it registers definitions, triggers
// runs, and works their tasks through a [store.Store]. Programs mostly use
// it through the typed handle dagen generates (New<Workflow>Workflow takes
// an [Engine]), and call [New], [Engine.Start] and [Engine.Stop]
// themselves; the package example wires a two-step definition by hand, the
// way the generated code does, and runs it on the in-memory store.
//
// It uses every facet of the store as it is (store.Execution, store.Admin,
// store.Triggers) and asks it for one thing only: whether it elects a
// leader ([store.Elector]); over a store that does not, every worker leads.
//
// Generated code (see cmd/dagen) builds a [Definition] per workflow and a
// typed handle around an [Engine]; the engine itself deals in encoded bytes.
// This package is the API; a started engine's worker is a set of internal
// services (internal/worker: claiming, executors, completer lanes and the
// schedule loop; internal/housekeeping: heartbeats, leadership, rescue,
// reports and pruning; internal/slots: the concurrency slots;
// internal/outage: backoff while the store fails). The worker claims a
// batch of ready tasks, executes them on a bounded pool, and completes the
// batch in one store call:
//
//	claim N ready tasks  ->  for each: skip check, then the step, with a ctx
//	                          carrying deadline, cancellation and attempt
//	                     ->  complete the N results in one unit
//
// A run triggered on a started engine that has free slots may skip the
// queue for its first step: the transaction that creates the run
// ([store.Starter]) also claims its first root task for this worker when
// the fair queue would hand that task out next anyway (its tenant has no
// backlog), and it goes straight to the executors (Config.DisableEagerStart
// turns this off). Likewise, the unit that stores a batch of results
// ([store.Continuer]) claims for this worker the steps those results made
// ready, up to the slots they free, unless another tenant has work queued
// that the fair queue would hand out first (Config.DisableEagerContinue
// turns this off): a chain runs on without a trip through the queue. The
// other steps are claimed from the fair queue. [Engine.Poll] completes
// results the same way.
//
// A task is looked at once all its parents are resolved. The rules (DESIGN
// §3): a skipped required parent skips the child; all parents skipped skips
// it; otherwise any skip predicate that holds skips it; otherwise it runs,
// and a skipped optional parent arrives as an empty dag.Maybe. A step that
// fails for good (retries spent, or dag.Terminal) fails the run, and the
// workflow's onfailure handler runs once.
//
// Deploys never hand a step wrong data nor fail a run that other code could
// finish. Every task has a signature ([Definition.Signatures]: names,
// kinds and types of the task and its parents), stored with it; a worker
// claims only the tasks whose signatures its registered definitions have,
// and steps read their parents by stored name ([ParentOutput]). A task no
// live worker serves waits in the queue: [Engine.Result] lists it in
// RunResult.Waiting, and the leader logs a WAITING event for it
// ([store.Deploys]).
//
// Time and events. A signal wait (KindSignal, //dag:signal) holds no
// worker: once its parents are resolved it is AWAITING in the store until
// [Engine.Signal] delivers its payload (a signal sent earlier is held) or
// its SignalTimeout skips it. Schedules (Definition.Schedules,
// //dag:schedule, or [Engine.CreateSchedule] at run time) live in the
// store ([store.Scheduler]): every worker fires the due slots of
// the workflows it serves, each slot's run keyed by its slot so it starts
// once (see package cronexpr for expressions and time zones).
//
// Composition. A child step (KindChild, //dag:child) starts a run of
// another workflow, named by Step.Child, and waits for it, AWAITING and
// holding no worker: it is created with the attempt's result, one child
// per attempt, under the run's tenant, and its end resolves the step with
// the output of its result step, or fails it. A run that fails, times out
// or is cancelled cancels its children. The child workflow must be
// registered on the engines that run the parent ([ErrChildNotRegistered]).
//
// For tests, Config.Manual gives an engine without background goroutines
// that [Engine.Poll] drives step by step; package dagtest builds on it with
// a fake clock.
package engine
