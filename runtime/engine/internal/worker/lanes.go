package worker

import "github.com/dagenhq/dagen/runtime/engine/internal/slots"

// A light tenant is one that holds at most lightTasks of a worker's
// tasks: one that triggers a run now and then while another tenant's
// backlog keeps every slot of the worker busy. The claim is fair by
// tenant, but on the worker a light tenant's run would still wait behind
// the backlog twice:
//
//   - for a slot: every slot is taken by the backlog's steps and by their
//     results waiting for the store, so the trigger could not start the
//     run's first step, and the step waited in the queue until a batch of
//     results was stored and the freed slots claimed again. Slots are
//     therefore kept for light tenants (internal/slots): claims fill all
//     but those, and a trigger of one tenant that holds no task here may
//     fill them too (Slots.StartCapacity). No more tasks than Concurrency are
//     held, ever.
//   - for the store: its result went to the completer of its run, behind
//     the batch of up to BatchSize results that completer was storing,
//     and then in the next batch, as large. Results of light tenants go
//     by a lane of their own, the light lane (laneOf), whose completer
//     stores them in batches of their own. A tenant is light there when
//     it holds at most LightTasks here and its task was not claimed with
//     more of the tenant's queued behind it (store.ClaimedTask's
//     TenantQueued): behind a backlog of thousands of tenants claimed in
//     turns, every one of them holds one task, and counting held tasks
//     alone sent all their results by the light lane, where the light
//     tenant's waited behind them.
//
// With both, a tenant running one run at a time beside another's backlog
// waits less for its steps' results, and no step of the backlog starts
// while one of its steps waits for a slot (see docs/performance.md, "The
// light lane").

// laneOf is the channel f goes to: the light lane when f's tenant is
// light, else the completer of f's run.
func (w *Worker) laneOf(f finished) chan finished {
	if !f.queued && w.slots.Light(f.tenant, slots.LightTasks) {
		return w.light
	}
	return w.results[completerOf(f.res.RunID)]
}

// lanes returns every completer's channel.
func (w *Worker) lanes() []chan finished {
	return append(w.results[:len(w.results):len(w.results)], w.light)
}
