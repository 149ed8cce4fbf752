// Package outage keeps a worker's loops calm while its store fails: a
// bounded, jittered backoff between attempts, and a log of the store's
// health that speaks once per change of state.
package outage

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// MaxBackoff caps how long a worker waits between attempts while its
// store fails.
const MaxBackoff = 5 * time.Second

// Backoff is a bounded, jittered exponential backoff: each loop that calls
// the store keeps one, so a store that is down is tried a few times a
// second at first and every few seconds later, never in a busy loop.
type Backoff struct {
	Min, Max time.Duration
	n        int // failures in a row
}

// Next returns how long to wait after another failure: min·2^n capped at
// max, with ±25% jitter so that workers do not retry in step.
func (b *Backoff) Next() time.Duration {
	d := b.Min
	for i := 0; i < b.n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	b.n++
	jitter := time.Duration(rand.Int64N(int64(d)/2+1)) - d/4
	return max(d+jitter, time.Millisecond)
}

// Reset starts over after a success.
func (b *Backoff) Reset() { b.n = 0 }

// NewHealth returns the health of worker's store, logged to log.
func NewHealth(log *slog.Logger, worker string) *Health { return &Health{log: log, worker: worker} }

// Health logs a failing store once per change of state, not once per
// attempt: "unreachable" at the first failure, "reachable again" at the
// first success after, with how many attempts failed in between. Each
// attempt is logged at debug level.
type Health struct {
	log    *slog.Logger
	worker string
	// Observe, if set, is told of every failure, by op: the store errors
	// metric. Set it before the health is shared.
	Observe func(op string)

	mu       sync.Mutex
	failing  bool
	since    time.Time
	failures int
}

// Failed records a failed store call of op.
func (h *Health) Failed(op string, err error) {
	if h.Observe != nil {
		h.Observe(op)
	}
	h.mu.Lock()
	first := !h.failing
	if first {
		h.failing, h.since, h.failures = true, time.Now(), 0
	}
	h.failures++
	h.mu.Unlock()
	if first {
		h.log.Error("dagen: store unreachable; retrying with backoff until it answers", "worker", h.worker, "op", op, "err", err)
		return
	}
	h.log.Debug("dagen: store call failed", "worker", h.worker, "op", op, "err", err)
}

// IsFailing reports whether the last store call recorded failed.
func (h *Health) IsFailing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failing
}

// Succeeded records a store call that worked.
func (h *Health) Succeeded() {
	h.mu.Lock()
	if !h.failing {
		h.mu.Unlock()
		return
	}
	h.failing = false
	failures, since := h.failures, h.since
	h.mu.Unlock()
	h.log.Info("dagen: store reachable again", "worker", h.worker, "failed_calls", failures, "after", time.Since(since).Round(time.Millisecond))
}
