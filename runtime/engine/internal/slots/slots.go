// Package slots keeps a worker's concurrency slots: how many tasks it
// holds, claimed and not yet stored, and by which runs and tenants.
//
// A task takes a slot from the moment a claim (or a trigger that starts
// runs here, or a completion that claims the steps its results made
// ready) reserves it until its result is stored or dropped: results
// waiting for the store count, so the worker never holds more than its
// concurrency. Some slots are kept for light tenants, those that hold
// almost nothing here, so that a tenant running a run now and then beside
// another's backlog does not wait behind it for a slot (see
// docs/performance.md, "The light lane").
//
// A completion may start the steps its results make ready in the slots
// those results free (store.Continuer), and a fan-out's first step makes
// more ready than the one slot it frees: the claim that took it kept slots
// for them, and the completion also takes free slots (TakeFree), so that
// the children start at once instead of waiting in the queue for the next
// claim (see docs/performance.md, "Fan-outs start their children on the
// worker").
package slots

import (
	"sync"
	"sync/atomic"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// LightTasks is the most tasks a tenant may hold on a worker, counting the
// one in question, for it to be light.
const LightTasks = 1

// Slots is a worker's slot accounting. It is safe for concurrent use.
type Slots struct {
	concurrency int

	// executing counts claimed tasks whose step has not finished, and the
	// slots reserved for a claim or a start under way (see Take); pending
	// counts finished steps whose result is not stored yet.
	executing atomic.Int64
	pending   atomic.Int64
	takeMu    sync.Mutex // held to take slots: see Take

	// held counts, by run, the tasks held: claimed and not yet stored or
	// dropped; attempts are the attempts held. Heartbeats name the
	// attempts, so the store can tell a task whose attempt the worker holds
	// from one it does not (its claim never reached the worker, or the
	// store lost the result of an attempt the worker finished).
	heldMu   sync.Mutex
	held     map[dag.RunID]int
	attempts map[store.HeldAttempt]int
	tenants  map[string]int // the held tasks, by tenant: see Light
}

// New returns the slots of a worker that holds at most concurrency tasks.
func New(concurrency int) *Slots {
	return &Slots{concurrency: concurrency, held: make(map[dag.RunID]int), attempts: make(map[store.HeldAttempt]int), tenants: make(map[string]int)}
}

// lightReserve is how many slots only runs of light tenants may take: one
// in 64, none below 64.
func (s *Slots) lightReserve() int { return s.concurrency / 64 }

// ClaimCapacity is how many slots claims, and completions that start the
// steps they made ready, may fill: all but the light tenants' reserve.
func (s *Slots) ClaimCapacity() int { return s.concurrency - s.lightReserve() }

// StartCapacity is how many slots a trigger of runs of these tenants may
// fill: all of them for one tenant that holds no task here, which its
// runs' first steps make light; else all but the light reserve.
func (s *Slots) StartCapacity(tenants map[string]bool) int {
	if len(tenants) == 1 {
		for t := range tenants {
			if s.Light(t, LightTasks-1) {
				return s.concurrency
			}
		}
	}
	return s.ClaimCapacity()
}

// Take reserves slots for tasks about to be claimed, out of capacity,
// counting them as executing: want is given the free slots and the slots
// held, and returns how many to take. The caller gives back those it did
// not fill (Unused). Taking before the store call, under one lock, keeps
// claimers and triggers that start runs here from taking the same free
// slots.
func (s *Slots) Take(capacity int, want func(free, held int) int) int {
	s.takeMu.Lock()
	defer s.takeMu.Unlock()
	held := int(s.executing.Load() + s.pending.Load())
	free := max(capacity-held, 0)
	n := min(want(free, held), free)
	if n > 0 {
		s.executing.Add(int64(n))
	}
	return n
}

// Unused gives back n slots Take reserved that no task filled.
func (s *Slots) Unused(n int) { s.executing.Add(-int64(n)) }

// TakeFree is Take for a completion whose results surely make n more steps
// ready than the slots they free: it takes up to n of the free slots the
// claims may fill, at once, counting them as executing. The caller passes
// what it took to Stored.
func (s *Slots) TakeFree(n int) int {
	if n <= 0 {
		return 0
	}
	return s.Take(s.ClaimCapacity(), func(free, _ int) int { return min(free, n) })
}

// Finished records that a step finished: its result now waits for the
// store, in its slot, or, when it was dropped (keep is false), its slot
// and task are given up at once.
func (s *Slots) Finished(a store.HeldAttempt, tenant string, keep bool) {
	if !keep {
		s.Unhold(a, tenant)
		s.executing.Add(-1)
		return
	}
	s.pending.Add(1)
	s.executing.Add(-1)
}

// Stored records that a batch of stored results (or one given up) gives
// its stored slots back, with the free slots its completion took
// (TakeFree), and that the store claimed next of the steps they made
// ready, which take slots first: nobody sees more slots free than there
// are.
func (s *Slots) Stored(stored, taken, next int) {
	s.executing.Add(int64(next - taken))
	s.pending.Add(-int64(stored))
}

// Executing and Pending are the slots of steps under way and of results
// waiting for the store.
func (s *Slots) Executing() int64 { return s.executing.Load() }

// Pending is the number of results waiting for the store.
func (s *Slots) Pending() int64 { return s.pending.Load() }

// Hold records that the worker holds these tasks.
func (s *Slots) Hold(tasks []store.ClaimedTask) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	for i := range tasks {
		s.held[tasks[i].RunID]++
		s.attempts[store.HeldOf(&tasks[i])]++
		s.tenants[tasks[i].Tenant]++
	}
}

// Unhold records that the worker no longer holds attempt a, a task of
// tenant.
func (s *Slots) Unhold(a store.HeldAttempt, tenant string) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if s.held[a.RunID]--; s.held[a.RunID] <= 0 {
		delete(s.held, a.RunID)
	}
	if s.attempts[a]--; s.attempts[a] <= 0 {
		delete(s.attempts, a)
	}
	if s.tenants[tenant]--; s.tenants[tenant] <= 0 {
		delete(s.tenants, tenant)
	}
}

// HeldAttempts returns the attempts the worker holds.
func (s *Slots) HeldAttempts() []store.HeldAttempt {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	held := make([]store.HeldAttempt, 0, len(s.attempts))
	for a := range s.attempts {
		held = append(held, a)
	}
	return held
}

// Holds reports whether the worker holds a task of run id.
func (s *Slots) Holds(id dag.RunID) bool {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	return s.held[id] > 0
}

// Light reports whether tenant holds at most most tasks here.
func (s *Slots) Light(tenant string, most int) bool {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	return s.tenants[tenant] <= most
}
