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
		"the run waits for an Approval signal (it holds no worker)",
		": approved by ann; paid pay-taxi-",
		"a second approval is refused: true",
		"the signal came first and was held; rejected by bob: over the limit; paid: false",
		`schedule Nightly of Report for finance: cron "0 3 * * *" in Europe/Paris, next slot `,
		"on a fake clock at 2026-01-01 03:00 CET: run ",
		`(COMPLETED) made "expenses of 2025-12-31"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
