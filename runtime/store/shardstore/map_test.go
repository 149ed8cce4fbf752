package shardstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/shardstore"
)

func TestMap(t *testing.T) {
	m := shardstore.EvenMap("a", "b", "c")
	require.NoError(t, m.Validate([]string{"a", "b", "c"}))
	require.Equal(t, "0-341=a,342-682=b,683-1023=c", m.String())
	back, err := shardstore.ParseMap(m.String())
	require.NoError(t, err)
	require.Equal(t, m, back)

	moved := m.Move(400, "c")
	require.NoError(t, moved.Validate(nil))
	require.Equal(t, "c", moved.Lookup(400))
	require.Equal(t, "b", moved.Lookup(399))
	require.Equal(t, "b", moved.Lookup(401))
	require.Equal(t, "0-341=a,342-399=b,400=c,401-682=b,683-1023=c", moved.String())

	for in, says := range map[string]string{
		"0-511=a":               "logical shard 512 is not mapped",
		"0-600=a,600-1023=b":    "logical shard 600 is mapped twice",
		"0-1024=a":              "at most 1023",
		"10-0=a,0-1023=b":       "goes up",
		"0-1023":                "is not from-to=shard",
		"x-1023=a":              "are numbers",
		"0-511=a,512-1023=nope": "",
	} {
		_, err := shardstore.ParseMap(in)
		if says == "" {
			require.NoError(t, err, in)
			continue
		}
		require.ErrorIs(t, err, shardstore.ErrInvalidMap, in)
		require.ErrorContains(t, err, says, in)
	}
	err = shardstore.Map{{From: 0, To: store.LogicalShards - 1, Shard: "z"}}.Validate([]string{"a"})
	require.ErrorContains(t, err, `shard "z", which is not configured`)
}
