package cli

import (
	"testing"

	"github.com/dagenhq/dagen/runtime/store"
)

// TestQueuedWhy checks what dagen runs show says of a queued step, for
// each kind of store.QueuePlace.
func TestQueuedWhy(t *testing.T) {
	for _, c := range []struct {
		p    store.QueuePlace
		want string
	}{
		{store.QueuePlace{}, "queued: next in the fair queue"},
		{store.QueuePlace{Ahead: 1}, "queued: 1 task ahead in the fair queue (0 of tenant acme)"},
		{store.QueuePlace{Ahead: 12, TenantAhead: 3}, "queued: 12 tasks ahead in the fair queue (3 of tenant acme)"},
		{store.QueuePlace{Ahead: store.MaxQueueAhead, TenantAhead: 5}, "queued: at least 10,000 tasks ahead in the fair queue (5 of tenant acme)"},
		{store.QueuePlace{RateLimited: "rate limit stripe (key acct_42): next token in 230ms"},
			"waiting for rate limit stripe (key acct_42): next token in 230ms"},
	} {
		if got := queuedWhy("acme", c.p); got != c.want {
			t.Errorf("queuedWhy(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
