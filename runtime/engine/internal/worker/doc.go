// Package worker is a started engine's worker: a service the engine starts
// and stops (Start, BeginStop, Stop) that claims tasks, runs their steps
// and stores their results, a file a job:
//
//   - poller.go: the poller, which claims tasks and fires timers, woken by
//     the store's notifications; alongside.go: a second claimer under load;
//   - executor.go: executors, started for the tasks claimed, none idle;
//   - completer.go and lanes.go: completer lanes, which store results in
//     batches and claim the steps they made ready (store.Continuer);
//   - start.go: the first steps of runs triggered here, started at once;
//   - worker.go: the service itself, its schedule loop and its keeper
//     (package housekeeping).
//
// It reaches the engine only through Host: the steps it runs and the
// waiters it tells are the engine's.
package worker
