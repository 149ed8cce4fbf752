package dagtest

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// maxRounds bounds RunUntilIdle so a workflow that never settles (a step
// retried with no delay forever) fails the test instead of hanging it.
const maxRounds = 1_000_000

// TB is the part of testing.TB that a Harness uses: *testing.T,
// *testing.B and *testing.F satisfy it. A Harness reports a store error,
// or a run that never settles, with Fatalf.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Harness is a manual engine over an in-memory store with a fake clock.
type Harness struct {
	// Engine is manual: RunUntilIdle, Advance and the engine's own Wait
	// drive it. Register workflows on it, or pass it to a generated
	// New…Workflow.
	Engine *engine.Engine
	// Store is the engine's store, on Clock.
	Store *memstore.Store
	// Clock is the store's clock; it moves only when the test moves it.
	Clock *Clock
	t     TB
}

// New returns a harness whose clock starts at Epoch. t is usually the
// test's *testing.T.
func New(t TB) *Harness {
	t.Helper()
	return NewWithClock(t, NewClock(Epoch))
}

// NewWithClock returns a harness on clock, for tests that start at a time
// of their own (a daylight saving change, say).
func NewWithClock(t TB, clock *Clock) *Harness {
	t.Helper()
	st := memstore.New(&memstore.Config{Now: clock.Now})
	e, err := engine.New(st, &engine.Config{Manual: true, WorkerID: "dagtest"})
	if err != nil {
		t.Fatalf("dagtest: %v", err)
	}
	return &Harness{Engine: e, Store: st, Clock: clock, t: t}
}

// RunUntilIdle polls the engine until nothing is ready and no timer or
// schedule is due, and returns how many tasks and timers it handled. A store error
// fails the test.
func (h *Harness) RunUntilIdle(ctx context.Context) int {
	h.t.Helper()
	total := 0
	for range maxRounds {
		n, err := h.Engine.Poll(ctx)
		if err != nil {
			h.t.Fatalf("dagtest: %v", err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
	h.t.Fatalf("dagtest: still busy after %d rounds: does a step retry forever without delay?", maxRounds)
	return total
}

// Advance moves the clock forward by d, then runs until idle.
func (h *Harness) Advance(ctx context.Context, d time.Duration) int {
	h.t.Helper()
	h.Clock.Advance(d)
	return h.RunUntilIdle(ctx)
}

// NextTimer returns the earliest pending wake time, and false if none.
func (h *Harness) NextTimer(ctx context.Context) (time.Time, bool) {
	h.t.Helper()
	at, ok, err := h.Store.NextTimer(ctx)
	if err != nil {
		h.t.Fatalf("dagtest: %v", err)
	}
	return at, ok
}

// AdvanceToNextTimer moves the clock to the next pending wake time and runs
// until idle. It reports false when no timer was pending.
func (h *Harness) AdvanceToNextTimer(ctx context.Context) bool {
	h.t.Helper()
	at, ok := h.NextTimer(ctx)
	if !ok {
		return false
	}
	if d := at.Sub(h.Clock.Now()); d > 0 {
		h.Clock.Advance(d)
	}
	h.RunUntilIdle(ctx)
	return true
}
