package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dagenhq/dagen/store"
)

// loop is the running worker: one poller claiming tasks, a pool of
// executors, one completer batching results back to the store.
type loop struct {
	ctx      context.Context    // cancelled at the end of Stop: steps see it
	cancel   context.CancelFunc // cancels ctx
	stopPoll chan struct{}      // closed by Stop: claim no more
	wake     chan struct{}      // a hint that work may be ready or slots free
	work     chan *store.ClaimedTask
	results  chan store.TaskResult
	inflight atomic.Int64
	execWG   sync.WaitGroup
	done     chan struct{} // closed when poller, executors and completer are gone
}

// Start starts working the registered workflows in the background until
// Stop. ctx is used only for values: cancelling it does not stop the
// engine.
func (e *Engine) Start(ctx context.Context) error {
	if e.cfg.Manual {
		return ErrManual
	}
	e.loopMu.Lock()
	defer e.loopMu.Unlock()
	if e.loop != nil {
		return ErrAlreadyStarted
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &loop{
		ctx: lctx, cancel: cancel,
		stopPoll: make(chan struct{}),
		wake:     make(chan struct{}, 1),
		work:     make(chan *store.ClaimedTask, e.cfg.Concurrency),
		results:  make(chan store.TaskResult, e.cfg.Concurrency),
		done:     make(chan struct{}),
	}
	e.loop = l
	e.stopping = false
	for range e.cfg.Concurrency {
		l.execWG.Add(1)
		go e.executor(l)
	}
	pollDone := make(chan struct{})
	go func() { defer close(pollDone); e.poller(l) }()
	completeDone := make(chan struct{})
	go func() { defer close(completeDone); e.completer(l) }()
	go func() {
		<-pollDone
		close(l.work)
		l.execWG.Wait()
		close(l.results)
		<-completeDone
		close(l.done)
	}()
	return nil
}

// Stop stops claiming, lets the steps in flight finish and stores their
// results. When ctx ends first, the steps' contexts are cancelled and Stop
// returns at once; tasks whose results were not stored are rescued by
// another worker when their lease ends.
func (e *Engine) Stop(ctx context.Context) error {
	e.loopMu.Lock()
	l := e.loop
	if l == nil || e.stopping {
		e.loopMu.Unlock()
		return ErrNotStarted
	}
	e.stopping = true
	close(l.stopPoll)
	e.loopMu.Unlock()

	var err error
	select {
	case <-l.done:
	case <-ctx.Done():
		l.cancel()
		err = fmt.Errorf("stop: %d steps still running when the deadline passed: %w", l.inflight.Load(), ctx.Err())
	}
	l.cancel()
	e.loopMu.Lock()
	e.loop = nil
	e.loopMu.Unlock()
	return err
}

// wakeLoop tells a running poller that work may be ready.
func (e *Engine) wakeLoop() {
	e.loopMu.Lock()
	l := e.loop
	e.loopMu.Unlock()
	if l != nil {
		l.signal()
	}
}

func (l *loop) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (e *Engine) poller(l *loop) {
	var lastTimers, lastRescue time.Time
	backoff := e.cfg.PollInterval
	for {
		select {
		case <-l.stopPoll:
			return
		default:
		}
		now := time.Now()
		if now.Sub(lastTimers) >= e.cfg.PollInterval {
			lastTimers = now
			if _, err := e.store.FireTimers(l.ctx, e.cfg.BatchSize); err != nil {
				e.log.Error("dagen: fire timers", "worker", e.cfg.WorkerID, "err", err)
			}
		}
		if now.Sub(lastRescue) >= e.cfg.Lease/4 {
			lastRescue = now
			if _, err := e.store.RescueExpired(l.ctx, e.cfg.BatchSize); err != nil {
				e.log.Error("dagen: rescue expired tasks", "worker", e.cfg.WorkerID, "err", err)
			}
		}
		free := e.cfg.Concurrency - int(l.inflight.Load())
		limit := min(free, e.cfg.BatchSize)
		claimed := 0
		if limit > 0 {
			tasks, err := e.store.ClaimTasks(l.ctx, store.ClaimParams{
				Worker: e.cfg.WorkerID, Workflows: e.registeredNames(), Limit: limit, Lease: e.cfg.Lease,
			})
			if err != nil {
				e.log.Error("dagen: claim tasks", "worker", e.cfg.WorkerID, "err", err, "retry_in", backoff)
				sleepFor(l.ctx, backoff, l.stopPoll)
				backoff = min(backoff*2, 5*time.Second)
				continue
			}
			backoff = e.cfg.PollInterval
			claimed = len(tasks)
			l.inflight.Add(int64(claimed))
			for i := range tasks {
				l.work <- &tasks[i]
			}
			if claimed == limit {
				continue // a full batch: there may be more
			}
		}
		select {
		case <-l.stopPoll:
			return
		case <-l.wake:
		case <-time.After(e.cfg.PollInterval):
		}
	}
}

func (e *Engine) executor(l *loop) {
	defer l.execWG.Done()
	for ct := range l.work {
		l.results <- e.execute(l.ctx, ct)
	}
}

func (e *Engine) completer(l *loop) {
	batch := make([]store.TaskResult, 0, e.cfg.BatchSize)
	for res := range l.results {
		batch = append(batch[:0], res)
	fill:
		for len(batch) < e.cfg.BatchSize {
			select {
			case r, ok := <-l.results:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		e.completeBatch(l, batch)
		l.inflight.Add(-int64(len(batch)))
		l.signal()
	}
}

// completeBatch stores a batch of results, retrying while the store is
// unreachable. Results that cannot be stored before the engine is told to
// give up are left to lease expiry: another worker re-runs those attempts.
func (e *Engine) completeBatch(l *loop, batch []store.TaskResult) {
	backoff := 10 * time.Millisecond
	for {
		outs, err := e.store.CompleteTasks(context.WithoutCancel(l.ctx), batch)
		if err == nil {
			e.afterComplete(batch, outs)
			return
		}
		e.log.Error("dagen: complete tasks", "worker", e.cfg.WorkerID, "tasks", len(batch), "err", err, "retry_in", backoff)
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// afterComplete wakes the waiters of runs that finished.
func (e *Engine) afterComplete(batch []store.TaskResult, outs []store.CompletionOutcome) {
	for i, o := range outs {
		if o.Outcome == store.OutcomeStale {
			e.log.Debug("dagen: stale result not applied", "run", batch[i].RunID, "step", batch[i].Step, "attempt", batch[i].Attempt)
			continue
		}
		if o.RunStatus.Terminal() {
			e.notify(batch[i].RunID)
		}
	}
}

// Poll does one round of work in the calling goroutine: it fires due
// timers, rescues expired leases, claims a batch, executes it in order and
// completes it. It returns how many timers and tasks it handled. Poll is
// how a manual engine is driven; it is safe on a started engine too.
func (e *Engine) Poll(ctx context.Context) (int, error) {
	fired, err := e.store.FireTimers(ctx, e.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("poll: fire timers: %w", err)
	}
	rescued, err := e.store.RescueExpired(ctx, e.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("poll: rescue: %w", err)
	}
	tasks, err := e.store.ClaimTasks(ctx, store.ClaimParams{
		Worker: e.cfg.WorkerID, Workflows: e.registeredNames(), Limit: e.cfg.BatchSize, Lease: e.cfg.Lease,
	})
	if err != nil {
		return 0, fmt.Errorf("poll: claim: %w", err)
	}
	if len(tasks) > 0 {
		results := make([]store.TaskResult, len(tasks))
		for i := range tasks {
			results[i] = e.execute(ctx, &tasks[i])
		}
		outs, err := e.store.CompleteTasks(ctx, results)
		if err != nil {
			return 0, fmt.Errorf("poll: complete: %w", err)
		}
		e.afterComplete(results, outs)
	}
	return fired + rescued + len(tasks), nil
}
