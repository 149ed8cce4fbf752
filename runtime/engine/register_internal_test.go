package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store/memstore"
)

// TestRegisterLeavesSignaturesInUseAlone checks that Register does not
// change a list of signatures that servedSignatures handed out: a poller may
// be passing it to a claim while Register runs.
func TestRegisterLeavesSignaturesInUseAlone(t *testing.T) {
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
	inUse := e.servedSignatures()
	seen := slices.Clone(inUse)
	register("a")
	register("b")
	require.Equal(t, seen, inUse, "the list in use is unchanged")
	var want []string
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		reg := e.lookup(n)
		want = append(want, reg.served...)
	}
	slices.Sort(want)
	require.Equal(t, want, e.servedSignatures(), "every registered task's signature and each workflow's legacy one, sorted")
	require.Len(t, want, 10)
}
