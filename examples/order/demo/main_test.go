package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemo runs the demo on the in-memory store and checks that both
// branches appear in its output.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), "", &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	t.Log(got)
	for _, want := range []string{"=> shipped: trk-demo-valid", "=> rejected: amount must be positive", "SKIPPED", "(slept)"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
