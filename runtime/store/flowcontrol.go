package store

import (
	"context"
	"fmt"
	"math"
	"time"
)

// MaxPriority is the highest run priority (NewRun.Priority); 0, the
// default, is the lowest.
const MaxPriority = 9

// MaxWeight is the highest tenant weight.
const MaxWeight = 100

// RateLimit is a token bucket per key: each holds up to Burst tokens and
// gains Rate a second, and starts full.
type RateLimit struct {
	Name  string
	Rate  float64
	Burst int
}

// Validate says what is wrong with the limit, if anything.
func (l RateLimit) Validate() error {
	switch {
	case l.Name == "":
		return fmt.Errorf("rate limit without a name")
	case !(l.Rate > 0) || math.IsInf(l.Rate, 0):
		return fmt.Errorf("rate limit %s: rate %v: a limit gains a positive number of tokens a second", l.Name, l.Rate)
	case l.Burst < 1:
		return fmt.Errorf("rate limit %s: burst %d: a bucket holds at least one token", l.Name, l.Burst)
	}
	return nil
}

// NextToken is how long a bucket of l that has tokens (and needs need)
// waits for them.
func (l RateLimit) NextToken(tokens float64, need int) time.Duration {
	missing := float64(need) - tokens
	if missing <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(missing / l.Rate * float64(time.Second)))
}

// TenantWeight is a tenant's weight in the fair queue.
type TenantWeight struct {
	Tenant string
	Weight int
}

// FlowControl is what a store keeps for the order of admission: a task
// that becomes ready is admitted by its run's concurrency cap (a capped
// run waits QUEUED until it has room), then by its step's rate limit (it
// waits, out of the fair queue and holding no worker, for its bucket's
// tokens, which its claim takes), then by the fair queue, which serves the
// tenants in turn, a tenant of weight w taking w places a turn, and hands
// each of a tenant's places to its ready task of the highest priority
// (then the oldest).
type FlowControl interface {
	// PutRateLimits creates or updates rate limits by name.
	PutRateLimits(ctx context.Context, limits []RateLimit) error
	// SetTenantWeight gives tenant a weight from 1 to MaxWeight (1 is
	// every tenant's default).
	SetTenantWeight(ctx context.Context, tenant string, weight int) error
	// TenantWeights lists the tenants whose weight is not 1, by tenant.
	TenantWeights(ctx context.Context) ([]TenantWeight, error)
}

// ValidWeight says what is wrong with a tenant weight, if anything.
func ValidWeight(weight int) error {
	if weight < 1 || weight > MaxWeight {
		return fmt.Errorf("tenant weight %d: a weight is 1 to %d (1 is the default)", weight, MaxWeight)
	}
	return nil
}

// RateWait says why a task waits for a rate limit's bucket of key, which
// has spare tokens beyond those its queued entries hold, with ahead tasks
// before it and units to take: "rate limit stripe (key acct_42): next
// token in …", the wait rounded to the millisecond.
func RateWait(l RateLimit, key string, spare float64, ahead, units int) string {
	msg := "rate limit " + l.Name
	if key != "" {
		msg += fmt.Sprintf(" (key %s)", key)
	}
	if ahead > 0 {
		msg += fmt.Sprintf(": %d waiting ahead,", ahead)
	} else {
		msg += ":"
	}
	if wait := l.NextToken(spare, units); wait > 0 {
		return msg + " next token in " + wait.Round(time.Millisecond).String()
	}
	return msg + " tokens available, admission due"
}
