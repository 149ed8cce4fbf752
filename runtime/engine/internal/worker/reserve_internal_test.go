package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// TestReserveKeepsWhatTheClaimLeft: the slots a claim took and did not
// fill go to its fan-outs' children, in claim order, as many as there are.
func TestReserveKeepsWhatTheClaimLeft(t *testing.T) {
	tasks := []store.ClaimedTask{{Signature: "fan"}, {Signature: "single"}, {Signature: "fan"}}
	extra := map[string]int{"fan": 4}
	require.Nil(t, reserve(tasks, nil, 10), "no fan-outs: nothing kept")
	require.Equal(t, []int{4, 0, 3}, reserve(tasks, extra, 10), "7 left of 10: 4, then 3")
	require.Equal(t, []int{4, 0, 4}, reserve(tasks, extra, 20), "no more than a task wants")
	require.Nil(t, reserve(tasks, extra, 3), "a claim that took its limit left nothing")
}
