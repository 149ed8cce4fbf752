package cronexpr

import (
	"strings"
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ expr, zone, want string }{
		{"", "", "empty cron expression"},
		{"0 3 * *", "", "write five fields"},
		{"0 3 * * * *", "", "write five fields"},
		{"61 * * * *", "", "write five fields"},
		{"@every 5m", "", "@every has no fixed slots"},
		{"CRON_TZ=UTC 0 3 * * *", "", "name the time zone with zone="},
		{"0 0 30 2 *", "", "matches no time"},
		{"0 3 * * *", "Mars/Olympus", `unknown time zone "Mars/Olympus"`},
		{"0 3 * * *", "Local", "depends on the host"},
	} {
		_, err := Parse(tc.expr, tc.zone)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %q) = %v, want an error with %q", tc.expr, tc.zone, err, tc.want)
		}
	}
	for _, ok := range []string{"0 3 * * *", "*/15 * * * 1-5", "@daily", "@hourly", "0 0 1 1 *"} {
		if _, err := Parse(ok, "Europe/Paris"); err != nil {
			t.Errorf("Parse(%q): %v", ok, err)
		}
	}
}

func mustParse(t *testing.T, expr, zone string) *Spec {
	t.Helper()
	s, err := Parse(expr, zone)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNextAndFirst(t *testing.T) {
	s := mustParse(t, "0 3 * * *", "Europe/Paris") // 02:00 UTC in winter
	at := time.Date(2026, 1, 10, 2, 0, 0, 0, time.UTC)
	if got := s.First(at); !got.Equal(at) {
		t.Errorf("First(slot) = %v, want the slot itself", got)
	}
	if got, want := s.Next(at), at.Add(24*time.Hour); !got.Equal(want) {
		t.Errorf("Next(slot) = %v, want %v", got, want)
	}
	if got := s.Next(at); got.Location() != time.UTC {
		t.Errorf("Next returns %v, want UTC", got.Location())
	}
}

func TestDue(t *testing.T) {
	s := mustParse(t, "0 * * * *", "")
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	due, next := s.Due(first, first.Add(5*time.Hour+30*time.Minute), 3)
	want := []time.Time{first.Add(3 * time.Hour), first.Add(4 * time.Hour), first.Add(5 * time.Hour)}
	if len(due) != 3 || !due[0].Equal(want[0]) || !due[2].Equal(want[2]) {
		t.Errorf("Due = %v, want the latest 3: %v", due, want)
	}
	if !next.Equal(first.Add(6 * time.Hour)) {
		t.Errorf("next = %v", next)
	}
	due, next = s.Due(first, first.Add(-time.Minute), 3)
	if len(due) != 0 || !next.Equal(first) {
		t.Errorf("nothing due yet: Due = %v, %v", due, next)
	}
	// Years behind on a minutely schedule: the walk is bounded and still
	// ends at now.
	m := mustParse(t, "* * * * *", "")
	now := first.AddDate(3, 0, 0)
	due, next = m.Due(first, now, 2)
	if len(due) != 2 || !due[1].Equal(now) || !next.Equal(now.Add(time.Minute)) {
		t.Errorf("far behind: Due = %v, %v", due, next)
	}
}
