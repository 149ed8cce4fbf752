package engine

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// maxStoreBackoff caps how long a worker waits between attempts while its
// store fails.
const maxStoreBackoff = 5 * time.Second

// backoff is a bounded, jittered exponential backoff: each loop that calls
// the store keeps one, so a store that is down is tried a few times a
// second at first and every few seconds later, never in a busy loop.
type backoff struct {
	min, max time.Duration
	n        int // failures in a row
}

// next returns how long to wait after another failure: min·2^n capped at
// max, with ±25% jitter so that workers do not retry in step.
func (b *backoff) next() time.Duration {
	d := b.min
	for i := 0; i < b.n && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	b.n++
	jitter := time.Duration(rand.Int64N(int64(d)/2+1)) - d/4
	return max(d+jitter, time.Millisecond)
}

// reset starts over after a success.
func (b *backoff) reset() { b.n = 0 }

// storeHealth logs a failing store once per change of state, not once per
// attempt: "unreachable" at the first failure, "reachable again" at the
// first success after, with how many attempts failed in between. Each
// attempt is logged at debug level.
type storeHealth struct {
	log    *slog.Logger
	worker string

	mu       sync.Mutex
	failing  bool
	since    time.Time
	failures int
}

// failed records a failed store call.
func (h *storeHealth) failed(op string, err error) {
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

// isFailing reports whether the last store call recorded failed.
func (h *storeHealth) isFailing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failing
}

// succeeded records a store call that worked.
func (h *storeHealth) succeeded() {
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
