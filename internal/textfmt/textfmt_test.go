package textfmt

import (
	"strings"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                         "-",
		250 * time.Millisecond:               "250ms",
		3*time.Second + 140*time.Millisecond: "3.1s",
		4*time.Minute + 12*time.Second:       "4m12s",
		2*time.Hour + 5*time.Minute:          "2h5m",
		76 * time.Hour:                       "3d4h",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestFirstLine(t *testing.T) {
	if got := FirstLine("boom\nstack"); got != "boom" {
		t.Errorf("FirstLine = %q", got)
	}
	if got := FirstLine(strings.Repeat("x", 200)); len(got) != 120 || !strings.HasSuffix(got, "...") {
		t.Errorf("FirstLine of a long line = %q", got)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{
		0: "0 tasks", 1: "1 task", 2: "2 tasks", 999: "999 tasks", 1000: "1,000 tasks",
		12345: "12,345 tasks", 1234567: "1,234,567 tasks", -1200: "-1,200 tasks",
	} {
		if got := Count(n, "task"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
