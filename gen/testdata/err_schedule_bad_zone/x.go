package schedule_bad_zone

import (
	"context"
	"time"
)

//dag:workflow
type Report struct{ Day string }

//dag:step
func Build(ctx context.Context, r Report) error { return nil }

func day(slot time.Time) Report { return Report{Day: slot.Format(time.DateOnly)} }

//dag:schedule cron="0 3 * * *" zone=Europe/Pariss
func Nightly(ctx context.Context, slot time.Time) (Report, error) { return day(slot), nil }

//dag:schedule cron="0 3 * * *" zone=Local
func Early(ctx context.Context, slot time.Time) (Report, error) { return day(slot), nil }

// The zone in the expression, where zone= says it.
//
//dag:schedule cron="CRON_TZ=Europe/Paris 0 3 * * *"
func Late(ctx context.Context, slot time.Time) (Report, error) { return day(slot), nil }
