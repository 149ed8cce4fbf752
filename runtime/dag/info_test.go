package dag

import (
	"bytes"
	"testing"
)

func TestNewRunIDIncreases(t *testing.T) {
	prev := NewRunID()
	for i := 0; i < 100000; i++ {
		id := NewRunID()
		if bytes.Compare(prev[:], id[:]) >= 0 {
			t.Fatalf("id %d: %s after %s: ids must increase", i, id, prev)
		}
		if id[6]>>4 != 7 || id[8]>>6 != 2 {
			t.Fatalf("id %s: not a UUIDv7 of the RFC 4122 variant", id)
		}
		prev = id
	}
}
