package slots_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine/internal/slots"
	"github.com/dagenhq/dagen/runtime/store"
)

func all(free, _ int) int { return free }

func TestTakeCountsResultsWaitingForTheStore(t *testing.T) {
	s := slots.New(128)
	require.Equal(t, 126, s.ClaimCapacity(), "two slots kept for light tenants")
	require.Equal(t, 100, s.Take(s.ClaimCapacity(), func(free, held int) int {
		require.Equal(t, 126, free)
		require.Zero(t, held)
		return 100
	}))
	s.Unused(40) // the claim found 60
	for range 60 {
		s.Finished(store.HeldAttempt{RunID: dag.RunID{1}}, "t", true)
	}
	require.Zero(t, s.Executing())
	require.EqualValues(t, 60, s.Pending())
	require.Equal(t, 66, s.Take(s.ClaimCapacity(), all), "results waiting for the store hold their slots")
	s.Unused(66)
	s.Stored(60, 0, 10) // stored, and the store claimed 10 steps they made ready
	require.EqualValues(t, 10, s.Executing())
	require.Zero(t, s.Pending())
}

func TestLightTenantsMayFillTheReserve(t *testing.T) {
	s := slots.New(128)
	held := []store.ClaimedTask{{RunID: dag.RunID{1}, Step: "a", Claim: 7, Tenant: "heavy"}, {RunID: dag.RunID{1}, Step: "b", Claim: 8, Tenant: "heavy"}}
	s.Hold(held)
	require.Equal(t, 128, s.StartCapacity(map[string]bool{"light": true}))
	require.Equal(t, 126, s.StartCapacity(map[string]bool{"heavy": true}))
	require.Equal(t, 126, s.StartCapacity(map[string]bool{"light": true, "other": true}))
	require.True(t, s.Light("light", slots.LightTasks))
	require.False(t, s.Light("heavy", slots.LightTasks))
	require.True(t, s.Holds(dag.RunID{1}))
	require.ElementsMatch(t, []store.HeldAttempt{store.HeldOf(&held[0]), store.HeldOf(&held[1])}, s.HeldAttempts())
	s.Unhold(store.HeldOf(&held[0]), "heavy")
	require.True(t, s.Light("heavy", slots.LightTasks))
	require.Equal(t, []store.HeldAttempt{store.HeldOf(&held[1])}, s.HeldAttempts())
	s.Unhold(store.HeldOf(&held[1]), "heavy")
	require.False(t, s.Holds(dag.RunID{1}))
	require.Empty(t, s.HeldAttempts())
}

// TestTakeNeverOverfills has many claimers take slots at once and hold
// them a while: no more than the capacity are ever taken.
func TestTakeNeverOverfills(t *testing.T) {
	const capacity = 8
	s := slots.New(capacity)
	var most atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 2000 {
				n := s.Take(capacity, func(free, _ int) int {
					runtime.Gosched() // widen the window between reading the slots and taking them
					return min(free, 3)
				})
				if now := s.Executing(); now > most.Load() {
					most.Store(now) // a lost update only hides a peak that others also see
				}
				runtime.Gosched()
				s.Unused(n)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most.Load(), int64(capacity))
	require.Zero(t, s.Executing())
}

// TestTakeFreeTakesOnlyFreeSlots: a completion takes free slots for the
// steps its results surely make ready, no more than are free, and gives
// back with Stored those the store did not fill.
func TestTakeFreeTakesOnlyFreeSlots(t *testing.T) {
	s := slots.New(128) // 126 for claims and completions
	require.Equal(t, 100, s.Take(s.ClaimCapacity(), func(int, int) int { return 100 }))
	for range 10 {
		s.Finished(store.HeldAttempt{RunID: dag.RunID{1}}, "t", true) // 90 executing, 10 waiting for the store
	}
	require.Zero(t, s.TakeFree(0))
	require.Equal(t, 26, s.TakeFree(49), "only the free slots")
	require.Zero(t, s.TakeFree(1), "none left")
	s.Stored(10, 26, 30) // the store started 30 steps: the results' 10 slots and 20 of the 26
	require.EqualValues(t, 90+30, s.Executing())
	require.Zero(t, s.Pending())
	require.Equal(t, 6, s.Take(s.ClaimCapacity(), all), "the 6 the store did not fill are free again")
}
