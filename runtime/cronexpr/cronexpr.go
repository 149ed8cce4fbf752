package cronexpr

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Spec is a parsed cron expression in a time zone.
type Spec struct {
	expr  string
	zone  *time.Location
	sched *cron.SpecSchedule
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse reads a cron expression in zone, an IANA zone name ("" is UTC).
// Errors say what to write.
func Parse(expr, zone string) (*Spec, error) {
	loc, err := LoadZone(zone)
	if err != nil {
		return nil, err
	}
	e := strings.TrimSpace(expr)
	switch {
	case e == "":
		return nil, errors.New(`empty cron expression: write five fields, such as "0 3 * * *" (03:00 every day)`)
	case strings.HasPrefix(e, "@every"):
		return nil, fmt.Errorf(`cron %q: @every has no fixed slots, so its runs could not be keyed by slot: write the times, such as "*/15 * * * *"`, expr)
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return nil, fmt.Errorf("cron %q: name the time zone with zone=, not in the expression", expr)
	}
	s, err := parser.Parse(e)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %v: write five fields (minute hour day-of-month month day-of-week), such as \"0 3 * * *\"", expr, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron %q: not a schedule of fixed times", expr)
	}
	spec.Location = loc
	if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, loc)).IsZero() {
		return nil, fmt.Errorf("cron %q: matches no time (such as the 30th of February)", expr)
	}
	return &Spec{expr: expr, zone: loc, sched: spec}, nil
}

// LoadZone returns the location of an IANA zone name; "" and "UTC" are UTC.
func LoadZone(zone string) (*time.Location, error) {
	if zone == "" || zone == "UTC" {
		return time.UTC, nil
	}
	if zone == "Local" {
		return nil, errors.New(`zone "Local" depends on the host: name an IANA zone, such as "Europe/Paris"`)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: name an IANA zone, such as \"Europe/Paris\" or \"America/New_York\"", zone)
	}
	return loc, nil
}

// String returns the expression as written.
func (s *Spec) String() string { return s.expr }

// Zone returns the expression's time zone.
func (s *Spec) Zone() *time.Location { return s.zone }

// Next returns the first slot strictly after t, in UTC.
func (s *Spec) Next(t time.Time) time.Time {
	return s.sched.Next(t).UTC()
}

// First returns the first slot at or after t, in UTC.
func (s *Spec) First(t time.Time) time.Time {
	return s.Next(t.Add(-time.Nanosecond))
}

// Due returns the slots from first through now, oldest first, at most max
// of them (the latest), and the first slot after now. first should be a
// slot. Far-behind schedules are walked slot by slot, so Due bounds the walk
// at maxWalk slots: past that, it returns the latest max slots before now
// that it finds by walking back from now's day.
func (s *Spec) Due(first, now time.Time, max int) (due []time.Time, next time.Time) {
	if max <= 0 {
		max = 1
	}
	t := s.First(first)
	for n := 0; !t.IsZero() && !t.After(now); n++ {
		if n == maxWalk {
			// Too far behind to walk: start over near now.
			return s.Due(now.Add(-catchupWindow), now, max)
		}
		due = append(due, t)
		if len(due) > max {
			due = due[1:]
		}
		t = s.Next(t)
	}
	return due, t
}

const (
	maxWalk       = 100_000
	catchupWindow = 7 * 24 * time.Hour
)
