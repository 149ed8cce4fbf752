package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs the demo on the in-memory store and checks that both
// branches appear in its output, and that starting the valid order again
// finds its run by its key.
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
	first := regexp.MustCompile(`order demo-valid \(.*\)\nrun (\S+)\n`).FindStringSubmatch(got)
	if first == nil {
		t.Fatal("output lacks the valid order's run")
	}
	if want := "order demo-valid again: same run " + first[1] + ", duplicate\n"; !strings.Contains(got, want) {
		t.Errorf("output lacks %q", want)
	}
}
