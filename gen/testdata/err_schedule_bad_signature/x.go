package schedule_bad_signature

import (
	"context"
	"time"
)

//dag:workflow
type Report struct{ Day string }

//dag:step
func Build(ctx context.Context, r Report) error { return nil }

func day(slot time.Time) Report { return Report{Day: slot.Format(time.DateOnly)} }

// No slot.
//
//dag:schedule cron="0 3 * * *"
func Nightly(ctx context.Context) (Report, error) { return Report{}, nil }

// No error.
//
//dag:schedule cron="0 4 * * *"
func Early(ctx context.Context, slot time.Time) Report { return day(slot) }

// Not a workflow input.
//
//dag:schedule cron="0 5 * * *"
func Late(ctx context.Context, slot time.Time) (string, error) { return "", nil }

// A pointer to one.
//
//dag:schedule cron="0 6 * * *"
func Later(ctx context.Context, slot time.Time) (*Report, error) { return nil, nil }

// On a method.
type jobs struct{}

//dag:schedule cron="0 7 * * *"
func (jobs) Latest(ctx context.Context, slot time.Time) (Report, error) { return day(slot), nil }
