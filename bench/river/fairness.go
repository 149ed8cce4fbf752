package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/dagenhq/dagen/bench/figures"
	"github.com/dagenhq/dagen/bench/procstat"
)

// fairness is the fairness workload of dagen's benchmark, with River:
// tenant A inserts one job at a time and waits for it to complete, first
// on an idle client, then right after B's backlog of jobs was inserted
// (with the client stopped, so the whole backlog is queued before A's
// first loaded job). River has no tenants: A's jobs queue behind B's.
func (b *bench) fairness(ctx context.Context) (result, error) {
	o := b.o
	nA, nB := o.aJobs, o.jobs
	client, maxWorkers, err := b.newClient()
	if err != nil {
		return result{}, err
	}
	idleWatch := watch(client, 0, fairWarmJobs+nA+16)
	if err := client.Start(ctx); err != nil {
		idleWatch.close()
		return result{}, fmt.Errorf("start client: %w", err)
	}
	var idle []float64
	for i := range fairWarmJobs + nA {
		d, _, err := b.runA(ctx, client, idleWatch, i)
		if err != nil {
			idleWatch.close()
			return result{}, errors.Join(err, stopClient(client))
		}
		if i >= fairWarmJobs {
			idle = append(idle, figures.Ms(d))
		}
	}
	idleWatch.close()
	if err := stopClient(client); err != nil {
		return result{}, err
	}

	// B's backlog goes in with no client running; a stopped client still
	// inserts.
	insertStart := time.Now()
	if err := insertJobs(ctx, client, nB); err != nil {
		return result{}, err
	}
	insertSeconds := time.Since(insertStart).Seconds()

	loadedClient, _, err := b.newClient()
	if err != nil {
		return result{}, err
	}
	w := watch(loadedClient, nB, nB+nA+1000)
	defer w.close()
	win := procstat.Start(ctx, procstat.Backends(b.pool, appName))
	start := time.Now()
	if err := loadedClient.Start(ctx); err != nil {
		return result{}, fmt.Errorf("start client: %w", err)
	}
	var loaded, started []float64
	underLoad := 0
	for i := range nA {
		d, s, err := b.runA(ctx, loadedClient, w, fairWarmJobs+nA+i)
		if err != nil {
			return result{}, errors.Join(err, stopClient(loadedClient))
		}
		loaded, started = append(loaded, figures.Ms(d)), append(started, figures.Ms(s))
		if w.bCompleted() < nB {
			underLoad++
		}
	}
	var waitErr error
	select {
	case <-w.bDone:
	case <-w.broken:
		waitErr = w.failure()
	case <-ctx.Done():
		waitErr = fmt.Errorf("%w after %d of B's %d jobs completed", context.Cause(ctx), w.bCompleted(), nB)
	}
	seconds := time.Since(start).Seconds()
	u := win.Stop(ctx)
	if err := stopClient(loadedClient); err != nil && waitErr == nil {
		waitErr = err
	}
	if waitErr != nil {
		return result{}, waitErr
	}

	res := result{
		Workload:      "fairness",
		Jobs:          nB + nA,
		Seconds:       figures.Round(seconds, 3),
		InsertSeconds: figures.Round(insertSeconds, 3),
		Runs:          fairWarmJobs + 2*nA + nB,
		ARuns:         nA,
		BRuns:         nB,
		UnderLoad:     underLoad,
	}
	res.IdleP50Ms, res.IdleP99Ms = figures.Percentiles(idle)
	res.P50Ms, res.P99Ms = figures.Percentiles(loaded)
	res.AStartP50Ms, res.AStartP99Ms = figures.Percentiles(started)
	b.fill(&res, u, maxWorkers)
	fmt.Printf("river %s fairness: tenant A p50/p99 %.2f/%.2f ms idle, %.2f/%.2f ms behind B's %d jobs (insert to Work %.2f/%.2f ms; %d of A's %d jobs completed with B's backlog left); B drained in %.3fs\n",
		o.settings, res.IdleP50Ms, res.IdleP99Ms, res.P50Ms, res.P99Ms, nB, res.AStartP50Ms, res.AStartP99Ms, underLoad, nA, seconds)
	return res, nil
}

// runA inserts one of A's jobs and waits for its completion event; it
// returns the time from the insert's start to the event, and to the start
// of the job's Work.
func (b *bench) runA(ctx context.Context, client *river.Client[pgx.Tx], w *watcher, n int) (done, started time.Duration, err error) {
	t0 := time.Now()
	r, err := client.Insert(ctx, tenantAArgs{Num: n}, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("insert tenant A job %d: %w", n, err)
	}
	if err := w.await(ctx, r.Job.ID); err != nil {
		return 0, 0, fmt.Errorf("tenant A job %d: %w", n, err)
	}
	done = time.Since(t0)
	if at, ok := b.started.LoadAndDelete(r.Job.ID); ok {
		started = at.(time.Time).Sub(t0)
	}
	return done, started, nil
}

// watcher reads a client's completion events: it tells waiters when A's
// jobs complete and counts B's.
type watcher struct {
	mu      sync.Mutex
	waiting map[int64]chan struct{}
	doneA   map[int64]bool
	b, bOf  int
	err     error
	bDone   chan struct{} // closed when bOf B jobs completed
	broken  chan struct{} // closed when a job failed or the subscription ended
	unsub   func()
	stopped chan struct{}
	wg      sync.WaitGroup
}

// watch subscribes to the client's events: bOf B jobs are awaited, and the
// channel holds size events, so none are dropped.
func watch(client *river.Client[pgx.Tx], bOf, size int) *watcher {
	events, unsub := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: size,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	w := &watcher{waiting: map[int64]chan struct{}{}, doneA: map[int64]bool{}, bOf: bOf,
		bDone: make(chan struct{}), broken: make(chan struct{}), unsub: unsub, stopped: make(chan struct{})}
	if bOf == 0 {
		close(w.bDone)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.stopped:
				return
			case ev, ok := <-events:
				if !ok || ev == nil {
					w.fail(errors.New("event subscription closed early"))
					return
				}
				w.record(ev)
			}
		}
	}()
	return w
}

func (w *watcher) record(ev *river.Event) {
	if ev.Kind != river.EventKindJobCompleted {
		w.fail(fmt.Errorf("job %d (%s) %s", ev.Job.ID, ev.Job.Kind, ev.Kind))
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.Job.Kind == (tenantAArgs{}).Kind() {
		if ch, ok := w.waiting[ev.Job.ID]; ok {
			close(ch)
			delete(w.waiting, ev.Job.ID)
		} else {
			w.doneA[ev.Job.ID] = true // completed before its waiter came
		}
		return
	}
	w.b++
	if w.b == w.bOf {
		close(w.bDone)
	}
}

func (w *watcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
		close(w.broken)
	}
}

func (w *watcher) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *watcher) bCompleted() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b
}

// await waits for the completion of A's job id.
func (w *watcher) await(ctx context.Context, id int64) error {
	w.mu.Lock()
	if w.doneA[id] {
		delete(w.doneA, id)
		w.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	w.waiting[id] = ch
	w.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-w.broken:
		return w.failure()
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (w *watcher) close() {
	close(w.stopped)
	w.wg.Wait()
	w.unsub()
}
