package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// BenchmarkEngineMemstore measures whole-engine throughput on the in-memory
// store: runs are triggered up front, then the started engine drains them.
// It reports steps/s; b.N counts steps.
//
//	go test -run '^$' -bench EngineMemstore -benchtime 1000000x ./engine
func BenchmarkEngineMemstore(b *testing.B) {
	for _, chain := range []int{1, 10} {
		b.Run(fmt.Sprintf("chain=%d", chain), func(b *testing.B) {
			benchChain(b, memstore.New(nil), chain, 256)
		})
	}
}

// BenchmarkEnginePostgres is the same on the Postgres store, with 64
// steps executing at once.
//
//	go test -run '^$' -bench EnginePostgres -benchtime 20000x ./engine
func BenchmarkEnginePostgres(b *testing.B) {
	for _, chain := range []int{1, 10} {
		b.Run(fmt.Sprintf("chain=%d", chain), func(b *testing.B) {
			_, st := benchStore(b, 16)
			benchChain(b, st, chain, 64)
		})
	}
}

// benchStore returns a Postgres store in a migrated schema of its own, on
// a pool of conns connections, and the pool.
func benchStore(b *testing.B, conns int32) (*pgxpool.Pool, *pgstore.Store) {
	b.Helper()
	pool := pgtest.NewPool(b, conns)
	if err := pgstore.Migrate(context.Background(), pool); err != nil {
		b.Fatal(err)
	}
	st, err := pgstore.New(context.Background(), pool, nil)
	if err != nil {
		b.Fatal(err)
	}
	return pool, st
}

func benchChain(b *testing.B, st store.Store, chain, concurrency int) {
	ctx := context.Background()
	runs := max(b.N/chain, 1)
	var finished atomic.Int64
	allDone := make(chan struct{})
	noop := func(context.Context, engine.StepInput) ([]byte, error) { return nil, nil }
	last := func(context.Context, engine.StepInput) ([]byte, error) {
		if finished.Add(1) == int64(runs) {
			close(allDone)
		}
		return nil, nil
	}
	def := &engine.Definition{Name: "bench"}
	for i := range chain {
		s := engine.Step{Name: fmt.Sprintf("s%d", i), Run: noop}
		if i > 0 {
			s.Parents = req(fmt.Sprintf("s%d", i-1))
		}
		if i == chain-1 {
			s.Run = last
		}
		def.Steps = append(def.Steps, s)
	}
	e, err := engine.New(st, &engine.Config{Concurrency: concurrency, PollInterval: time.Millisecond, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Register(def); err != nil {
		b.Fatal(err)
	}
	reqs := make([]engine.TriggerRequest, 0, 1000)
	for i := 0; i < runs; i += cap(reqs) {
		reqs = reqs[:0]
		for j := i; j < min(i+cap(reqs), runs); j++ {
			reqs = append(reqs, engine.TriggerRequest{Workflow: "bench", Tenant: fmt.Sprintf("t%d", j%8), Input: j})
		}
		if _, err := e.TriggerMany(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	if err := e.Start(ctx); err != nil {
		b.Fatal(err)
	}
	<-allDone
	elapsed := time.Since(start)
	b.StopTimer()
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.Stop(stopCtx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(runs*chain)/elapsed.Seconds(), "steps/s")
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// BenchmarkFanOutPostgres measures one fan-out run at a time (a root, 50
// children, a join) on an idle engine on Postgres: trigger, then wait for
// its result. It reports ms/run, and children/run, how many of a run's
// children its root's completion started on the worker (the rest waited
// in the queue for a claim).
//
//	go test -run '^$' -bench FanOutPostgres -benchtime 200x ./runtime/engine
func BenchmarkFanOutPostgres(b *testing.B) {
	ctx := context.Background()
	_, st := benchStore(b, 16)
	const width = 50
	noop := func(context.Context, engine.StepInput) ([]byte, error) { return nil, nil }
	def := &engine.Definition{Name: "fan", Steps: []engine.Step{{Name: "root", Run: noop}}}
	var children []string
	for i := range width {
		name := fmt.Sprintf("c%02d", i)
		children = append(children, name)
		def.Steps = append(def.Steps, engine.Step{Name: name, Run: noop, Parents: req("root")})
	}
	def.Steps = append(def.Steps, engine.Step{Name: "join", Run: noop, Parents: req(children...)})
	e, err := engine.New(st, &engine.Config{Concurrency: 256, BatchSize: 64, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Register(def); err != nil {
		b.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := e.Stop(stopCtx); err != nil {
			b.Fatal(err)
		}
	}()
	started := 0
	b.ResetTimer()
	for i := range b.N {
		id, err := e.Trigger(ctx, "fan", "t", i)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Wait(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		started += countTrue(startedWith(b, ctx, e, id), children)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/run")
	b.ReportMetric(float64(started)/float64(b.N), "children/run")
}
