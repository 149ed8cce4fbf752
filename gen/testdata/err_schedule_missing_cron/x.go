package schedule_missing_cron

import (
	"context"
	"time"
)

//dag:workflow
type Report struct{ Day string }

//dag:step
func Build(ctx context.Context, r Report) error { return nil }

func day(slot time.Time) Report { return Report{Day: slot.Format(time.DateOnly)} }

// No cron= at all.
//
//dag:schedule tenant=system
func Nightly(ctx context.Context, slot time.Time) (Report, error) { return day(slot), nil }

// An expression with spaces, not quoted: read whole, and checked.
//
//dag:schedule cron=0 3 * * * tenant=system
func Early(ctx context.Context, slot time.Time) (Report, error) { return day(slot), nil }
