package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/faultproxy"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// logCount is a slog handler that counts records by level and keeps their
// messages.
type logCount struct {
	mu       sync.Mutex
	errors   int
	messages []string
}

func (h *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCount) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logCount) WithGroup(string) slog.Handler            { return h }
func (h *logCount) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := r.Level.String() + " " + r.Message
	if r.Level >= slog.LevelError {
		h.errors++
		// An error's attributes (the store call, its error) say what to
		// look for when a test that wants none fails.
		r.Attrs(func(a slog.Attr) bool {
			msg += " " + a.String()
			return true
		})
	}
	h.messages = append(h.messages, msg)
	return nil
}

func (h *logCount) errorCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.errors
}

func (h *logCount) contains(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.messages {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// proxied is a Postgres schema reached through a fault proxy.
type proxied struct {
	proxy  *faultproxy.Proxy
	schema string
	url    string // through the proxy, search_path set
}

func newProxied(t *testing.T) *proxied {
	t.Helper()
	network, addr := pgtest.ServerAddr(t)
	p, err := faultproxy.Start(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	schema := pgtest.Schema(t)
	require.NoError(t, pgstore.Migrate(context.Background(), pgtest.Pool(t, schema, 2)))
	return &proxied{proxy: p, schema: schema, url: pgtest.ViaURL(t, schema, p.Addr()) + "&connect_timeout=1"}
}

// pool opens a pool through the proxy; it is closed when the test ends.
func (p *proxied) pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), p.url)
	require.NoError(t, err)
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { pool.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("the pool did not close")
		}
	})
	return pool
}

// holdFlow has a step that runs until released, and a sleep.
func holdFlow(release <-chan struct{}, running chan<- dag.RunID) *engine.Definition {
	return &engine.Definition{Name: "hold", Steps: []engine.Step{
		{Name: "nap", Kind: engine.KindSleep, Sleep: func(ctx context.Context, in engine.StepInput) (engine.Wake, error) {
			n, err := engine.Input[int](in)
			if err != nil || n >= 0 {
				return engine.Wake{}, err // a hold run: no sleep
			}
			return engine.Wake{Delay: 300 * time.Millisecond}, nil
		}},
		{Name: "work", Parents: []engine.Parent{{Name: "nap"}}, Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
			n, _ := engine.Input[int](in)
			if n >= 0 {
				running <- in.Info.RunID
				<-release
			}
			return engine.Encode(n)
		}},
	}}
}

// TestStoreOutageBacksOff cuts the database away for three seconds while
// every slot of a worker is held and a timer falls due: the worker tries
// the store a few times a second at most, and says it is unreachable once
// and reachable once, not once per attempt. Before, it retried in a busy
// loop, with an error line for each attempt (see docs/performance.md,
// "Tests: figures from their comments").
func TestStoreOutageBacksOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := newProxied(t)
	st, err := pgstore.New(ctx, db.pool(t), nil)
	require.NoError(t, err)
	logs := &logCount{}
	release, running := make(chan struct{}), make(chan dag.RunID, 2)
	e, err := engine.New(st, &engine.Config{
		Concurrency: 2, PollInterval: 10 * time.Millisecond, Lease: 30 * time.Second, HeartbeatInterval: 200 * time.Millisecond,
		Logger: slog.New(logs),
	})
	require.NoError(t, err)
	require.NoError(t, e.Register(holdFlow(release, running)))
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})

	// A run that sleeps 300 ms, then two that hold both slots.
	napper, err := e.Trigger(ctx, "hold", "t", -1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res, err := e.Result(ctx, napper)
		return err == nil && res.Tasks["nap"].Status == store.TaskSleeping
	}, 10*time.Second, 5*time.Millisecond)
	var held []dag.RunID
	for i := range 2 {
		id, err := e.Trigger(ctx, "hold", "t", i)
		require.NoError(t, err)
		held = append(held, id)
	}
	<-running
	<-running

	// The timer falls due while the database is away.
	db.proxy.Set(faultproxy.Down)
	attempts, errs := db.proxy.Attempts(), logs.errorCount()
	time.Sleep(3 * time.Second)
	attempts, errs = db.proxy.Attempts()-attempts, logs.errorCount()-errs
	db.proxy.Set(faultproxy.Up)
	t.Logf("during a 3 s outage with every slot held: %d connection attempts, %d error lines", attempts, errs)
	require.Less(t, attempts, int64(60), "connection attempts in 3 s (a busy loop makes thousands)")
	require.LessOrEqual(t, errs, 3, "error lines in 3 s: one when the store goes away")
	require.True(t, logs.contains("store unreachable"))

	close(release)
	for _, id := range append(held, napper) {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}
	require.Eventually(t, func() bool { return logs.contains("store reachable again") }, 10*time.Second, 10*time.Millisecond)
}

// TestStopAndCloseWithFrozenDatabase freezes the database (it accepts no
// byte: a stalled server or a silent partition) while a worker holds a
// finished step's result: Stop returns by its deadline and says the result
// was left to its lease, and Close returns by its own. Before, Stop
// returned 5 s late and Close waited until the database answered again.
func TestStopAndCloseWithFrozenDatabase(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := newProxied(t)
	st, err := pgstore.Open(ctx, db.url)
	require.NoError(t, err)
	logs := &logCount{}
	release, running := make(chan struct{}), make(chan dag.RunID, 1)
	e, err := engine.New(st, &engine.Config{
		Concurrency: 2, PollInterval: 10 * time.Millisecond, Lease: 30 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
		Logger: slog.New(logs),
	})
	require.NoError(t, err)
	require.NoError(t, e.Register(holdFlow(release, running)))
	require.NoError(t, e.Start(ctx))
	_, err = e.Trigger(ctx, "hold", "t", 1)
	require.NoError(t, err)
	<-running

	db.proxy.Set(faultproxy.Frozen)
	t.Cleanup(func() { db.proxy.Set(faultproxy.Up) })
	close(release) // its result cannot be stored now

	stopCtx, stopCancel := context.WithTimeout(ctx, 2*time.Second)
	defer stopCancel()
	began := time.Now()
	err = e.Stop(stopCtx)
	stopped := time.Since(began)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	t.Logf("Stop with a frozen database and a 2 s deadline returned after %s: %v", stopped, err)
	require.Less(t, stopped, 3*time.Second, "Stop returns by its deadline (2 s), give or take")
	require.True(t, logs.contains("left to their leases"), "the log says results were left to their leases")

	closeCtx, closeCancel := context.WithTimeout(ctx, time.Second)
	defer closeCancel()
	began = time.Now()
	err = st.CloseContext(closeCtx)
	closed := time.Since(began)
	t.Logf("CloseContext with a 1 s deadline returned after %s: %v", closed, err)
	require.Less(t, closed, 2*time.Second, "Close returns by its deadline (1 s), give or take")
}
