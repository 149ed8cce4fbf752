package crashtest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/crashtest/flow"
	"github.com/dagenhq/dagen/internal/faultproxy"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

var chaosDuration = flag.Duration("chaos.duration", 3*time.Second,
	"how long TestChaosNetwork cuts and freezes the database's connections (go test -run Chaos -chaos.duration 60s ./internal/crashtest)")

// memRecorder keeps the steps' executions in memory.
type memRecorder struct {
	mu   sync.Mutex
	ends map[string]int // run/step -> executions that ended
}

func (r *memRecorder) Record(ctx context.Context, step string, _ int, phase string) error {
	if phase != "end" {
		return nil
	}
	info, _ := dag.Info(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends[info.RunID.String()+"/"+step]++
	return nil
}

// TestChaosNetwork runs the crash flow (fan-out, fan-in, a durable sleep,
// a flaky step) on four workers whose connections to Postgres go through a
// proxy that, for -chaos.duration, keeps cutting them (the database is
// down) and freezing them (it stalls). Then the network heals: every run
// completes with the right outputs, and every step is COMPLETED once in the
// log, the fan-in included.
func TestChaosNetwork(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), *chaosDuration+2*time.Minute)
	defer cancel()
	network, addr := pgtest.ServerAddr(t)
	proxy, err := faultproxy.Start(network, addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	schema := pgtest.Schema(t)
	require.NoError(t, pgstore.Migrate(ctx, pgtest.Pool(t, schema, 2)))
	url := pgtest.ViaURL(t, schema, proxy.Addr()) + "&connect_timeout=1"

	rec := &memRecorder{ends: map[string]int{}}
	var workers []*flow.JobWorkflow
	var engines []*engine.Engine
	for i := range 4 {
		pool, err := pgxpool.New(ctx, url)
		require.NoError(t, err)
		st, err := pgstore.New(ctx, pool, nil)
		require.NoError(t, err)
		e, err := engine.New(st, &engine.Config{
			WorkerID: fmt.Sprintf("chaos-%d", i), Concurrency: 16, PollInterval: 10 * time.Millisecond,
			Lease: 3 * time.Second, HeartbeatInterval: 200 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		require.NoError(t, err)
		wf, err := flow.NewJobWorkflow(e)
		require.NoError(t, err)
		require.NoError(t, e.Start(flow.WithRecorder(ctx, rec)))
		workers, engines = append(workers, wf), append(engines, e)
		t.Cleanup(func() {
			proxy.Set(faultproxy.Up)
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer scancel()
			_ = e.Stop(sctx)
			pool.Close()
		})
	}

	// Runs arrive while the network misbehaves.
	var runs []*flow.JobRun
	var mu sync.Mutex
	chaosDone := make(chan struct{})
	started := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(runs)
	}
	go func() {
		defer close(chaosDone)
		// The chaos lasts its duration and, on a machine slow enough that
		// every trigger so far fell into an outage, until a few runs are in
		// flight, so that there is something for it to disturb.
		end, limit := time.Now().Add(*chaosDuration), time.Now().Add(10**chaosDuration)
		for time.Now().Before(end) || (started() < 3 && time.Now().Before(limit)) {
			time.Sleep(time.Duration(150+rand.IntN(300)) * time.Millisecond)
			fault := faultproxy.Down
			if rand.IntN(2) == 0 {
				fault = faultproxy.Frozen
			}
			proxy.Set(fault)
			time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
			proxy.Set(faultproxy.Up)
		}
	}()
	for n := 0; ; n++ {
		select {
		case <-chaosDone:
		default:
			sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
			run, err := workers[n%len(workers)].Start(sctx, fmt.Sprintf("tenant-%d", n%3), flow.Job{N: n, Work: 5 * time.Millisecond, Nap: 50 * time.Millisecond})
			scancel()
			if err == nil { // a trigger that failed in the outage created nothing, or its run is found below
				mu.Lock()
				runs = append(runs, run)
				mu.Unlock()
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		break
	}
	proxy.Set(faultproxy.Up)
	t.Logf("chaos for %s: %d connection attempts, %d runs started", *chaosDuration, proxy.Attempts(), len(runs))
	require.NotEmpty(t, runs)

	for _, run := range runs {
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		res, err := run.Wait(wctx)
		wcancel()
		if err != nil {
			r, rerr := engines[0].Result(ctx, run.ID())
			if rerr == nil {
				for name, task := range r.Tasks {
					t.Logf("%s: %s attempt %d worker %s err %q wake %v", name, task.Status, task.Attempt, task.Worker, task.Error, task.WakeAt)
				}
			}
			events, _ := engines[0].Events(ctx, run.ID())
			for _, ev := range events {
				t.Logf("event %s %s %s %d %s", ev.At.Format("15:04:05.000"), ev.Step, ev.Type, ev.Attempt, ev.Detail)
			}
		}
		require.NoError(t, err, "run %s", run.ID())
		require.Equal(t, res.Start+1, res.FanA)
		require.Equal(t, res.FanA+res.FanB+res.FanC+res.FanD, res.Join, "the fan-in got every branch's output")
		require.Equal(t, 2*res.Join, res.Flaky)
		events, err := engines[0].Events(ctx, run.ID())
		require.NoError(t, err)
		completed := map[string]int{}
		for _, ev := range events {
			if ev.Type == store.EventCompleted {
				completed[ev.Step]++
			}
		}
		for _, step := range []string{"Start", "FanA", "FanB", "FanC", "FanD", "Join", "Nap", "Flaky"} {
			require.Equal(t, 1, completed[step], "run %s: %s completed %d times in the log", run.ID(), step, completed[step])
		}
		rec.mu.Lock()
		joins := rec.ends[run.ID().String()+"/Join"]
		rec.mu.Unlock()
		require.GreaterOrEqual(t, joins, 1, "run %s: Join ran", run.ID())
	}
}
