package shardstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
)

// TestRunCacheKeepsTwoGenerations: a run remembered is found until two
// generations went by after it, and the cache never holds more.
func TestRunCacheKeepsTwoGenerations(t *testing.T) {
	var c runCache
	first := dag.NewRunID()
	c.put(first, 3)
	for k := 1; k < rememberedGeneration; k++ {
		c.put(dag.NewRunID(), 1)
	}
	i, ok := c.get(first)
	require.True(t, ok)
	require.Equal(t, 3, i)
	c.put(dag.NewRunID(), 2) // a new generation: first is in the older one
	i, ok = c.get(first)
	require.True(t, ok, "a run of the last generation is still found")
	require.Equal(t, 3, i)
	for k := 1; k < rememberedGeneration; k++ {
		c.put(dag.NewRunID(), 1)
	}
	c.put(dag.NewRunID(), 2) // a third generation retires first's
	_, ok = c.get(first)
	require.False(t, ok)
	require.LessOrEqual(t, len(c.recent)+len(c.older), 2*rememberedGeneration)
}
