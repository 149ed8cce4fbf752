package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestSubscribeSurvivesLostConnection kills the listening connection: the
// subscription reconnects and keeps delivering hints.
func TestSubscribeSurvivesLostConnection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(t, nil, 4)
	ch, err := s.Subscribe(ctx)
	require.NoError(t, err)

	var channel string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT 'dagen_ready.' || current_schema()`).Scan(&channel))
	var killed bool
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT bool_or(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN ' || quote_ident($1)`, channel).Scan(&killed))
	require.True(t, killed, "found the listening connection")

	// Keep enqueuing until a hint arrives: the reconnect hint, or a
	// notification on the new connection.
	enqueue := func() {
		require.NoError(t, s.CreateRuns(ctx, []store.NewRun{newRun("wf", "t", step("a"))}))
	}
	require.True(t, hinted(ch, enqueue), "a hint after the listening connection was lost")
	for hinted(ch, nil) { // drain what the reconnect left
	}
	require.True(t, hinted(ch, enqueue), "a notification on the new connection")
}

// TestSubscriptionsShareOneConnection checks that Subscribe and
// SubscribeCancels, however many, listen on one connection, closed when
// the last subscription ends and opened again by the next one.
func TestSubscriptionsShareOneConnection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newStore(t, nil, 4)
	var channel string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT 'dagen_ready.' || current_schema()`).Scan(&channel))
	listening := func() int {
		t.Helper()
		var n int
		require.NoError(t, s.Pool().QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN ' || quote_ident($1)`, channel).Scan(&n))
		return n
	}

	first, endFirst := context.WithCancel(ctx)
	_, err := s.Subscribe(first)
	require.NoError(t, err)
	_, err = s.SubscribeCancels(first)
	require.NoError(t, err)
	second, endSecond := context.WithCancel(ctx)
	ready, err := s.Subscribe(second)
	require.NoError(t, err)
	require.Equal(t, 1, listening(), "one connection for every subscription")

	endFirst()
	require.True(t, hinted(ready, func() {
		require.NoError(t, s.CreateRuns(ctx, []store.NewRun{newRun("wf", "t", step("a"))}))
	}), "a subscription outlives another's end")
	endSecond()
	require.Eventually(t, func() bool { return listening() == 0 }, 10*time.Second, 10*time.Millisecond,
		"the connection is closed after the last subscription")

	cancels, err := s.SubscribeCancels(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, listening())
	r := newRun("wf", "t", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
	_, err = s.CancelRun(ctx, r.ID)
	require.NoError(t, err)
	select {
	case id := <-cancels:
		require.Equal(t, r.ID, id)
	case <-time.After(10 * time.Second):
		t.Fatal("no cancel notification on the new connection")
	}
}

// hinted calls trigger until ch receives, for up to 30s; with a nil
// trigger it waits once, 300ms.
func hinted(ch <-chan struct{}, trigger func()) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if trigger != nil {
			trigger()
		}
		select {
		case <-ch:
			return true
		case <-time.After(300 * time.Millisecond):
		}
		if trigger == nil {
			return false
		}
	}
	return false
}

// TestEnqueueNotifiesWhenQueueWasEmpty: an enqueue into an empty queue
// notifies; one into a queue that holds work does not, unless the store's
// NotifyEvery has passed since it last forced one (or is negative: every
// enqueue notifies).
func TestEnqueueNotifiesWhenQueueWasEmpty(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		every    time.Duration
		nonEmpty bool // whether an enqueue into a queue with work notifies
	}{{time.Hour, false}, {-1, true}} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pool := newStore(t, nil, 4).Pool()
		s, err := pgstore.New(ctx, pool, &pgstore.Config{NotifyEvery: tc.every})
		require.NoError(t, err)
		ch, err := s.Subscribe(ctx)
		require.NoError(t, err)
		create := func() {
			require.NoError(t, s.CreateRuns(ctx, []store.NewRun{newRun("wf", "t", step("a"))}))
		}

		create()
		require.True(t, hinted(ch, nil), "every=%s: the first enqueue, into an empty queue, notifies", tc.every)
		create()
		require.Equal(t, tc.nonEmpty, hinted(ch, nil), "every=%s: an enqueue into a queue with work", tc.every)

		drain(t, s, 2, 10)
		create()
		require.True(t, hinted(ch, nil), "every=%s: an enqueue into the emptied queue notifies", tc.every)
	}
}
