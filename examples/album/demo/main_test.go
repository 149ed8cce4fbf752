package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemo runs the demo on the in-memory store and checks its output.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), "", &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	t.Log(got)
	for _, want := range []string{
		"Resize[1] dunes.jpg   -> dunes_64.jpg   attempt 2, key ",
		"/Resize[1]\n",
		"album trip: 5 thumbs published: beach_64.jpg dunes_64.jpg pier_64.png sunset_64.jpg harbour_64.jpg\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
