package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
)

func echoDef(name string) *engine.Definition {
	return &engine.Definition{Name: name, Steps: []engine.Step{{Name: "only", Run: fn(func(_ context.Context, in int, _ []string) (string, error) {
		return fmt.Sprint(in), nil
	})}}}
}

func TestOperatorMethods(t *testing.T) {
	ctx := context.Background()
	e, err := engine.New(memstore.New(nil), nil)
	require.NoError(t, err)
	require.NoError(t, e.Register(echoDef("a")))
	require.NoError(t, e.Register(echoDef("b")))
	for i := range 3 {
		_, err := e.Trigger(ctx, "a", "t", i)
		require.NoError(t, err)
	}
	_, err = e.Trigger(ctx, "b", "t", 9)
	require.NoError(t, err)

	page, err := e.ListRuns(ctx, store.RunFilter{Workflow: "a", Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Runs, 2)
	require.False(t, page.Next.IsZero())

	n, err := e.CancelRuns(ctx, store.RunFilter{Workflow: "a"}, 10)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	counts, err := e.CountRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunCancelled: 3, store.RunRunning: 1}, counts)
}
