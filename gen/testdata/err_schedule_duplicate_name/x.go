package schedule_duplicate_name

import (
	"context"
	"time"
)

//dag:workflow
type Report struct{ Day string }

//dag:step
func Build(ctx context.Context, r Report) error { return nil }

func day(slot time.Time) Report { return Report{Day: slot.Format(time.DateOnly)} }

//dag:schedule cron="0 3 * * *"
func Nightly(ctx context.Context, slot time.Time) (Report, error) { return day(slot), nil }

//dag:schedule cron="0 4 * * *" name=Nightly
func Early(ctx context.Context, slot time.Time) (Report, error) { return day(slot), nil }
