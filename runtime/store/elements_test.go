package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

func TestElementNames(t *testing.T) {
	require.Equal(t, "Resize[3]", store.ElementName("Resize", 3))
	step, i, ok := store.ParseElement("Resize[12]")
	require.True(t, ok)
	require.Equal(t, "Resize", step)
	require.Equal(t, 12, i)
	for _, bad := range []string{"Resize", "[3]", "Resize[]", "Resize[-1]", "Resize[03]", "Resize[x]", "Resize[3", "Resize3]"} {
		_, _, ok := store.ParseElement(bad)
		require.False(t, ok, bad)
	}
}

func TestCollectOutputs(t *testing.T) {
	require.Equal(t, `[1,"a",null]`, string(store.CollectOutputs([][]byte{[]byte("1"), []byte(`"a"`), nil})))
	require.Nil(t, store.CollectOutputs([][]byte{nil, nil}), "no element has output: neither has the step")
	require.Equal(t, `[]`, string(store.CollectOutputs(nil)))
}

func TestAdmitElements(t *testing.T) {
	for _, tc := range []struct{ next, total, pending, limit, want int }{
		{0, 5, 5, 0, 5},  // no bound: all
		{0, 5, 5, 2, 2},  // mapping with limit 2
		{2, 5, 4, 2, 1},  // one resolved: one more
		{2, 5, 5, 2, 0},  // none resolved: none
		{5, 5, 1, 2, 0},  // all queued
		{0, 3, 3, 10, 3}, // a limit above the total
	} {
		require.Equal(t, tc.want, store.AdmitElements(tc.next, tc.total, tc.pending, tc.limit), "%+v", tc)
	}
}
