package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// TestRegisterLeavesNamesInUseAlone checks that Register does not change
// a list of names that registeredNames handed out: a poller may be passing
// it to a claim while Register runs.
func TestRegisterLeavesNamesInUseAlone(t *testing.T) {
	e, err := New(memstore.New(nil), &Config{Manual: true})
	require.NoError(t, err)
	register := func(name string) {
		t.Helper()
		run := func(context.Context, StepInput) ([]byte, error) { return nil, nil }
		require.NoError(t, e.Register(&Definition{Name: name, Steps: []Step{{Name: "a", Run: run}}}))
	}
	for _, n := range []string{"c", "d", "e"} {
		register(n)
	}
	inUse := e.registeredNames()
	seen := slices.Clone(inUse)
	register("a") // sorts first
	register("b")
	require.Equal(t, seen, inUse, "the list in use is unchanged")
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, e.registeredNames())
}
