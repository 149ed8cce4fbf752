package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

// BenchmarkClaimComplete measures store throughput on Postgres: workers
// claim batches of 64 and complete each batch in one call. One op is one
// task; tasks/s counts tasks completed per second of wall time. Creating
// the runs is not timed.
//
//	go test -run '^$' -bench ClaimComplete -benchtime 20000x ./store/pgstore/
func BenchmarkClaimComplete(b *testing.B) {
	for _, shape := range []struct {
		name  string
		chain int
	}{{"single", 1}, {"chain10", 10}} {
		for _, workers := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/workers=%d", shape.name, workers), func(b *testing.B) {
				benchClaimComplete(b, shape.chain, workers)
			})
		}
	}
}

func benchClaimComplete(b *testing.B, chain, workers int) {
	ctx := context.Background()
	s := newStore(b, nil, int32(workers+2))
	tasks := []store.NewTask{step("s0")}
	for k := 1; k < chain; k++ {
		tasks = append(tasks, step(fmt.Sprintf("s%d", k), fmt.Sprintf("s%d", k-1)))
	}
	nRuns := (b.N + chain - 1) / chain
	runs := make([]store.NewRun, nRuns)
	for i := range runs {
		runs[i] = newRun("bench", fmt.Sprintf("tenant-%d", i%4), tasks...)
	}
	createInBatches(b, s, runs)
	total := int64(nRuns * chain)

	b.ResetTimer()
	start := time.Now()
	var doneTasks atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for doneTasks.Load() < total {
				got, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: fmt.Sprintf("w%d", w), Limit: 64, Lease: time.Hour})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					time.Sleep(200 * time.Microsecond)
					continue
				}
				results := make([]store.TaskResult, len(got))
				for i, ct := range got {
					results[i] = completed(ct)
				}
				if _, err := s.CompleteTasks(ctx, results); err != nil {
					errs <- err
					return
				}
				doneTasks.Add(int64(len(got)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "tasks/s")
}

// BenchmarkCreateRuns measures creating single-task runs 1,000 per call.
func BenchmarkCreateRuns(b *testing.B) {
	s := newStore(b, nil, 2)
	runs := make([]store.NewRun, b.N)
	for i := range runs {
		runs[i] = newRun("bench", fmt.Sprintf("tenant-%d", i%4), step("a"))
	}
	b.ResetTimer()
	start := time.Now()
	createInBatches(b, s, runs)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}

// BenchmarkCreateChainRuns measures creating ten-step chain runs 1,000 per
// call, every run with the same task list, as the engine gives the runs of
// a workflow. One op is one run.
func BenchmarkCreateChainRuns(b *testing.B) {
	s := newStore(b, nil, 2)
	tasks := []store.NewTask{step("s0")}
	for i := 1; i < 10; i++ {
		tasks = append(tasks, step(fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i-1)))
	}
	runs := make([]store.NewRun, b.N)
	for i := range runs {
		runs[i] = newRun("bench", "tenant", tasks...)
		runs[i].Tasks = tasks
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	createInBatches(b, s, runs)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}

// BenchmarkCreateRunsOneAtATime measures creating single-task runs of one
// tenant, one run a call: from one goroutine (a call's latency), and from
// 16 at once (calls made at once share transactions; see CreateRuns).
func BenchmarkCreateRunsOneAtATime(b *testing.B) {
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := newStore(b, nil, 16)
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						r := newRun("bench", "tenant", step("a"))
						if err := s.CreateRuns(ctx, []store.NewRun{r}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
		})
	}
}
