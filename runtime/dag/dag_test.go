package dag_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/dag"
)

func TestRunIDRoundTrip(t *testing.T) {
	a, b := dag.NewRunID(), dag.NewRunID()
	require.NotEqual(t, a, b)
	require.False(t, a.IsZero())
	require.Equal(t, byte(0x70), a[6]&0xf0, "version 7")
	require.Equal(t, byte(0x80), a[8]&0xc0, "RFC 4122 variant")
	parsed, err := dag.ParseRunID(a.String())
	require.NoError(t, err)
	require.Equal(t, a, parsed)

	js, err := json.Marshal(struct{ ID dag.RunID }{a})
	require.NoError(t, err)
	var back struct{ ID dag.RunID }
	require.NoError(t, json.Unmarshal(js, &back))
	require.Equal(t, a, back.ID)

	for _, bad := range []string{"", "xyz", "0192f0c4-7a3e-7b1c-9d2e-1f2a3b4c5d6", "0192f0c4x7a3e-7b1c-9d2e-1f2a3b4c5d6e", "zz92f0c4-7a3e-7b1c-9d2e-1f2a3b4c5d6e"} {
		_, err := dag.ParseRunID(bad)
		require.ErrorIs(t, err, dag.ErrBadRunID, bad)
	}
}

func TestTerminalNil(t *testing.T) {
	require.NoError(t, dag.Terminal(nil))
	require.False(t, dag.IsTerminal(nil))
}

func TestFailureError(t *testing.T) {
	f := dag.Failure{Step: "Charge", Attempt: 3, Message: "declined"}
	require.EqualError(t, f, "step Charge failed on attempt 3: declined")
	f.InputError = "decode workflow input as orders.Order: json: cannot unmarshal string"
	require.EqualError(t, f, "step Charge failed on attempt 3: declined; the run input did not decode, the handler got the zero input: "+
		"decode workflow input as orders.Order: json: cannot unmarshal string")
}

func TestNewRunIDInCarriesShard(t *testing.T) {
	var prev dag.RunID
	for i := range 5000 {
		shard := uint16(i % (dag.MaxRunIDShard + 1))
		id := dag.NewRunIDIn(shard)
		if got := id.Shard(); got != shard {
			t.Fatalf("id %s carries shard %d, want %d", id, got, shard)
		}
		if id[6]>>4 != 7 || id[8]>>6 != 2 {
			t.Fatalf("id %s lost its version or variant", id)
		}
		if bytes.Compare(id[:8], prev[:8]) <= 0 {
			t.Fatalf("id %s is not after %s in time and counter", id, prev)
		}
		prev = id
	}
}
