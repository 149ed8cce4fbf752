package store_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
)

// TestServingAnswersAsServes: the function Serving returns answers as
// Serves does, for a short list, a long one (hashed) and none (any).
func TestServingAnswersAsServes(t *testing.T) {
	long := make([]string, 40)
	for i := range long {
		long[i] = fmt.Sprintf("sig%02d", i)
	}
	for _, sigs := range [][]string{nil, {"a", "b"}, long} {
		p := store.ClaimParams{Signatures: sigs}
		serves := p.Serving()
		for _, sig := range []string{"a", "b", "c", "sig00", "sig39", "sig40", ""} {
			require.Equal(t, p.Serves(sig), serves(sig), "signatures %d, asked %q", len(sigs), sig)
		}
	}
}
