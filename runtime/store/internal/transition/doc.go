// Package transition is the truth table of a run, written once: given the
// state of the runs and tasks a unit of work touches (a batch of attempt
// results, fired timers, rescued leases, a deadline, a signal, a
// cancellation) it decides each task's and run's transition and records
// what the store must then do, in order: the tasks and runs to write, the
// events to log, the parents whose children count down, the tasks to
// queue again, the elements to create and queue, and the runs that ended
// (whose tasks the store cancels and whose onfailure task it queues).
//
// It does no I/O and reads no clock. Both stores call it: memstore applies
// a Batch to the maps it holds; pgstore loads the rows a batch needs,
// lets a Batch decide, and writes the decision with its batched
// statements. Fan-in stays the store's (a row-level countdown in pgstore),
// so that exactly one completion makes a child ready; what follows from it
// is decided here, once.
package transition
