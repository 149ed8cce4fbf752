package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine/internal/housekeeping"
	"github.com/dagenhq/dagen/runtime/engine/internal/outage"
	"github.com/dagenhq/dagen/runtime/engine/internal/slots"
	"github.com/dagenhq/dagen/runtime/store"
)

// numCompleters is how many batches of results may be on their way to the
// store at once: two keep a store busy while the next batch fills. Each
// completer takes the results of its own share of the runs, so two
// batches never wait for each other's run locks.
const numCompleters = 2

// maxBatchRows bounds the tasks one batch of results may make ready or
// create, as the engine counts them (see finished): a batch stops growing
// once it reaches this many, short of BatchSize. Results of a fan-out's
// first step, 512 of which made 25,600 children ready in one transaction,
// then go in batches of some eighty: the memory a completion holds stays
// within a few megabytes, and no transaction locks its runs for long.
// One result that creates more (a mapped step of 100,000 elements) still
// goes alone.
const maxBatchRows = 4096

// finished is an attempt's result on its way to a completer, with rows:
// one for the task and one for each task it may make ready or create (its
// step's children, or its elements).
type finished struct {
	res    store.TaskResult
	rows   int
	tenant string // the run's: see laneOf
}

// loop is the running worker: one poller claiming tasks, executors started
// for the tasks it claims, completers batching results back to the store,
// and a keeper that heartbeats and, while leading, does housekeeping.
type loop struct {
	ctx    context.Context         // cancelled at the end of Stop: steps see it
	cancel context.CancelCauseFunc // cancels ctx, with errStopped
	// abandon is the context results are stored under: unlike ctx it
	// outlives the drain, and is cancelled only when Stop's deadline
	// passed, so a store that does not answer cannot hold Stop (or the
	// pool's Close) past it. Results not stored then are left to their
	// leases.
	abandon       context.Context
	abandonCancel context.CancelFunc
	stopPoll      chan struct{}   // closed by Stop: claim no more
	alongside     chan struct{}   // the poller's full claims: see claimAlongside
	wake          chan struct{}   // a hint that work may be ready or slots free
	notify        <-chan struct{} // the store's notifications, or nil
	work          chan *store.ClaimedTask
	results       [numCompleters]chan finished // by run: see completerOf
	light         chan finished                // the light lane: see laneOf
	slots         *slots.Slots                 // the tasks held, and the slots they take
	executors     atomic.Int64                 // executor goroutines running: see dispatch
	// Triggers that start runs' first steps here (see startRuns) register
	// in starts, until Stop sets stopped: work is closed only after them.
	startMu    sync.Mutex
	stopped    bool
	starts     sync.WaitGroup
	execWG     sync.WaitGroup
	done       chan struct{}        // closed when poller, executors and completer are gone
	keeper     *housekeeping.Keeper // heartbeats, and housekeeping while leading
	keeperDone chan struct{}        // closed when the keeper is gone

	timerMu   sync.Mutex
	nextTimer time.Time // earliest known pending wake time, zero if none

	published *[]string // the signatures last published (store.Deploys), nil before
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
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	actx, acancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &loop{
		ctx: lctx, cancel: cancel,
		abandon: actx, abandonCancel: acancel,
		stopPoll:   make(chan struct{}),
		alongside:  make(chan struct{}, 1),
		wake:       make(chan struct{}, 1),
		work:       make(chan *store.ClaimedTask, e.cfg.Concurrency),
		done:       make(chan struct{}),
		keeperDone: make(chan struct{}),
		slots:      slots.New(e.cfg.Concurrency),
	}
	if !e.cfg.DisableNotify {
		ch, err := e.store.Subscribe(lctx)
		if err != nil {
			e.log.Warn("dagen: store notifications unavailable; polling only", "worker", e.cfg.WorkerID, "err", err)
		}
		l.notify = ch
		// A hint that saves waiting for the heartbeat, which stays the truth.
		if ch, err := e.store.SubscribeCancels(lctx); err != nil {
			e.log.Warn("dagen: store cancel notifications unavailable; cancellations reach steps by heartbeat", "worker", e.cfg.WorkerID, "err", err)
		} else {
			go e.cancelNotified(lctx, ch)
		}
	}
	for i := range l.results {
		l.results[i] = make(chan finished, e.cfg.Concurrency) // never more results than tasks held
	}
	l.light = make(chan finished, e.cfg.Concurrency)
	l.keeper = housekeeping.New(housekeeping.Config{
		Store: e.store, Elector: e.elector, Worker: e.cfg.WorkerID,
		Interval: e.cfg.HeartbeatInterval, Lease: e.cfg.Lease, Retention: e.cfg.Retention, Batch: e.cfg.BatchSize,
		Log: e.log, Health: e.health, Leading: &e.leading,
		Held: l.slots.HeldRuns, Cancelled: e.cancelRuns, Publish: func(ctx context.Context) { e.serve(ctx, l) }, Rescued: l.signal,
	})
	l.keeper.Beat(lctx) // register before claiming, so the first claims are covered
	e.loop = l
	e.stopping = false
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		var wg sync.WaitGroup
		wg.Go(func() { e.claimAlongside(l) })
		e.poller(l)
		wg.Wait()
	}()
	completeDone := make(chan struct{})
	var completeWG sync.WaitGroup
	for _, results := range l.lanes() {
		completeWG.Add(1)
		go func() { defer completeWG.Done(); e.completer(l, results) }()
	}
	go func() { completeWG.Wait(); close(completeDone) }()
	go func() { defer close(l.keeperDone); l.keeper.Run(l.ctx, l.stopPoll) }()
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); e.scheduleLoop(l) }()
	go func() {
		<-pollDone
		<-schedDone
		l.starts.Wait() // Stop set stopped before the poller could end
		close(l.work)
		l.execWG.Wait()
		for _, results := range l.lanes() {
			close(results)
		}
		<-completeDone
		close(l.done)
	}()
	return nil
}

// Stop stops claiming and gives up leadership, lets the steps in flight
// finish and stores their results, heartbeating all the while so that
// their tasks stay with this worker, then retires the worker. When ctx ends
// first, the steps' contexts are cancelled and Stop returns without waiting
// for them: their tasks are released to other workers at once, and a late
// result of theirs is fenced off. A step that fails because of that
// cancellation has not failed: its result is dropped, and the released
// attempt does not count against its retries.
func (e *Engine) Stop(ctx context.Context) error {
	e.loopMu.Lock()
	l := e.loop
	if l == nil || e.stopping {
		e.loopMu.Unlock()
		return ErrNotStarted
	}
	e.stopping = true
	l.startMu.Lock()
	l.stopped = true
	l.startMu.Unlock()
	close(l.stopPoll)
	e.loopMu.Unlock()

	// The drain may take ctx's time but for a reserve, kept to hand the
	// worker's unfinished tasks to other workers (RetireWorker): a store
	// that does not answer then costs no more than the reserve, and Stop
	// returns by ctx's deadline whatever the store does.
	drain, cleanup := ctx, context.WithoutCancel(ctx)
	var cancelDrain, cancelCleanup context.CancelFunc = func() {}, nil
	if dl, ok := ctx.Deadline(); ok {
		reserve := min(stopReserve, time.Until(dl)/10)
		drain, cancelDrain = context.WithDeadline(ctx, dl.Add(-reserve))
		cleanup, cancelCleanup = context.WithDeadline(cleanup, dl)
	} else {
		cleanup, cancelCleanup = context.WithTimeout(cleanup, stopReserve)
	}
	defer cancelDrain()
	defer cancelCleanup()
	var err error
	select {
	case <-l.done:
	case <-drain.Done():
		running, unstored := l.slots.Executing(), l.slots.Pending()
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded // the drain's share of it passed
		}
		err = fmt.Errorf("stop: %d steps still running and %d results unstored when the deadline passed: %w",
			running, unstored, cause)
		if unstored > 0 {
			e.log.Warn("dagen: stopping: results not stored by the deadline are left to their leases; another worker runs those attempts again",
				"worker", e.cfg.WorkerID, "results", unstored)
		}
		l.abandonCancel()
	}
	l.cancel(errStopped)
	<-l.keeperDone
	if n, rerr := e.store.RetireWorker(cleanup, e.cfg.WorkerID, true); rerr != nil {
		err = errors.Join(err, fmt.Errorf("stop: retire worker: %w", rerr))
	} else if n > 0 {
		e.log.Warn("dagen: released unfinished tasks to other workers", "worker", e.cfg.WorkerID, "tasks", n)
	}
	if e.elector != nil {
		if rerr := e.elector.Resign(cleanup); rerr != nil {
			err = errors.Join(err, fmt.Errorf("stop: resign leadership: %w", rerr))
		}
	}
	l.abandonCancel()
	e.loopMu.Lock()
	e.loop = nil
	e.loopMu.Unlock()
	return err
}

// stopReserve is the most of Stop's time kept to release the worker's
// tasks, and what Stop gives that when its ctx has no deadline.
const stopReserve = time.Second

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

// noteTimer records a wake time the poller should not sleep past.
func (l *loop) noteTimer(at time.Time) {
	l.timerMu.Lock()
	earlier := l.nextTimer.IsZero() || at.Before(l.nextTimer)
	if earlier {
		l.nextTimer = at
	}
	l.timerMu.Unlock()
	if earlier {
		l.signal()
	}
}

func (l *loop) timerDue(now time.Time) (due bool, next time.Time) {
	l.timerMu.Lock()
	defer l.timerMu.Unlock()
	return !l.nextTimer.IsZero() && !now.Before(l.nextTimer), l.nextTimer
}

func (e *Engine) poller(l *loop) {
	var lastTimers time.Time
	retry := outage.Backoff{Min: e.cfg.PollInterval, Max: outage.MaxBackoff}
	for {
		select {
		case <-l.stopPoll:
			return
		default:
		}
		// Claim first, then fire timers: a wake-up is most often for a task
		// just enqueued, which should not wait for the timer queries.
		full, err := e.claim(l)
		if err != nil {
			e.health.Failed("claim tasks", err)
			sleepFor(l.ctx, retry.Next(), l.stopPoll)
			continue
		}
		now := time.Now()
		// A timer due on this host's clock that the store does not fire is
		// not due on the store's clock (the clocks differ): waiting for it
		// by this clock would poll without a pause until the store's clock
		// catches up.
		notFired := false
		if due, _ := l.timerDue(now); due || now.Sub(lastTimers) >= e.cfg.PollInterval {
			lastTimers = now
			fired, err := e.fireTimers(l)
			if err != nil {
				// Every error path waits: a timer that stays due must not
				// turn a store that fails into a busy loop.
				e.health.Failed("fire timers", err)
				sleepFor(l.ctx, retry.Next(), l.stopPoll)
				continue
			}
			retry.Reset()
			if fired > 0 {
				continue // claim the tasks they enqueued
			}
			notFired = due
		}
		if full {
			// A full batch: there may be more, for a second claim too.
			select {
			case l.alongside <- struct{}{}:
			default:
			}
			continue
		}
		wait := e.cfg.PollInterval
		if _, next := l.timerDue(now); !next.IsZero() && !notFired {
			wait = max(min(wait, time.Until(next)), 0)
		}
		t := time.NewTimer(wait)
		select {
		case <-l.stopPoll:
			t.Stop()
			return
		case <-l.wake:
		case <-l.notify:
		case <-t.C:
		}
		t.Stop()
	}
}

// claim claims as many tasks as the worker may hold more of, and hands them
// to the executors. A task is held from its claim until its result is
// stored, so results waiting for the store count: were they left out, a
// result would queue behind as many others as the executors can produce
// while one completion is written, and a light tenant's result would wait
// longer for its transaction (see docs/performance.md, "Results waiting
// for the store count as held"). It reports whether the batch was full,
// so more may be ready.
func (e *Engine) claim(l *loop) (full bool, err error) {
	// An empty signature list would claim every task: a worker that
	// knows none claims nothing.
	sigs := e.servedSignatures()
	if len(sigs) == 0 {
		return false, nil
	}
	limit := l.slots.Take(l.slots.ClaimCapacity(), func(free, held int) int {
		// Under load, wait for a worthwhile batch rather than claiming a
		// few at a time.
		if n := min(free, e.cfg.BatchSize); held == 0 || n >= max(1, e.cfg.BatchSize/4) {
			return n
		}
		return 0
	})
	if limit <= 0 {
		return false, nil
	}
	tasks, err := e.claimTasks(l.ctx, store.ClaimParams{
		Worker: e.cfg.WorkerID, Signatures: sigs, Limit: limit, Lease: e.cfg.Lease,
	})
	l.slots.Unused(limit - len(tasks))
	if err != nil {
		return false, err
	}
	e.health.Succeeded()
	e.dispatch(l, tasks)
	return len(tasks) == limit, nil
}

// fireTimers fires due timers, learns when the next one is due, and
// returns how many it fired. On an error, the timers fired before it count
// as fired only when some were.
func (e *Engine) fireTimers(l *loop) (int, error) {
	fired := 0
	for {
		n, err := e.store.FireTimers(l.ctx, e.cfg.BatchSize)
		if err != nil {
			if fired > 0 {
				return fired, nil // claim what they enqueued; the next round fails again if the store does
			}
			return 0, err
		}
		fired += n
		if n < e.cfg.BatchSize {
			break
		}
	}
	at, ok, err := e.store.NextTimer(l.ctx)
	if err != nil {
		if fired > 0 {
			return fired, nil
		}
		return 0, err
	}
	e.health.Succeeded()
	l.timerMu.Lock()
	l.nextTimer = time.Time{}
	if ok {
		l.nextTimer = at
	}
	l.timerMu.Unlock()
	return fired, nil
}

// dispatch hands claimed tasks to the executors, starting as many more as
// there are tasks no executor is free for. Executors are not kept idle: an
// executor that finds no task waiting ends. A pool of Concurrency idle
// goroutines costs CPU for nothing: the garbage collector scans their
// stacks and shrinks them, and each step grows its executor's stack back
// (see docs/performance.md, "Executors are not kept idle").
func (e *Engine) dispatch(l *loop, tasks []store.ClaimedTask) {
	l.slots.Hold(tasks)
	for i := range tasks {
		l.work <- &tasks[i] // never blocks: work holds Concurrency
	}
	// Read after the sends: an executor that ends looks at work once more
	// after it stopped counting itself, so every task is picked up.
	for started := 0; started < len(tasks); {
		running := l.executors.Load()
		if running >= int64(e.cfg.Concurrency) {
			return // the running executors take the rest
		}
		if l.executors.CompareAndSwap(running, running+1) {
			started++
			l.execWG.Add(1)
			go e.executor(l)
		}
	}
}

// executor runs tasks from work until none is waiting.
func (e *Engine) executor(l *loop) {
	defer l.execWG.Done()
	for {
		var ct *store.ClaimedTask
		var ok bool
		select {
		case ct, ok = <-l.work:
		default:
			l.executors.Add(-1)
			select {
			case ct, ok = <-l.work: // sent as we were ending: dispatch may not have started anyone for it
				l.executors.Add(1)
			default:
				return
			}
		}
		if !ok {
			l.executors.Add(-1)
			return
		}
		e.run(l, ct)
	}
}

// run executes a claimed task and hands its result to a completer. A step
// that calls runtime.Goexit (t.FailNow in a helper, a log.Fatal-like
// wrapper that exits the goroutine) ends this goroutine, recover or not:
// run's deferred call then hands on a failed attempt, as for a panic, and
// starts an executor in this one's place, so neither the task nor the slot
// is lost.
func (e *Engine) run(l *loop, ct *store.ClaimedTask) {
	returned := false
	defer func() {
		if returned {
			return
		}
		res, keep := e.goexited(l.ctx, ct)
		e.handOn(l, finished{res, 1, ct.Tenant}, keep)
		l.execWG.Add(1)
		go e.executor(l) // counted in l.executors already: this one's place
	}()
	res, keep := e.execute(l.ctx, ct)
	returned = true
	e.handOn(l, finished{res, e.rowsOf(ct, &res), ct.Tenant}, keep)
}

// handOn passes a finished attempt's result to its completer, or, when
// Stop cut the attempt short (keep is false), drops it: RetireWorker
// releases the task.
func (e *Engine) handOn(l *loop, f finished, keep bool) {
	res := f.res
	l.slots.Finished(res.RunID, f.tenant, keep)
	if !keep {
		e.log.Info("dagen: step cut short by Stop; its task goes to another worker",
			"worker", e.cfg.WorkerID, "run", res.RunID, "step", res.Step, "attempt", res.Attempt)
		return
	}
	l.signal()
	l.laneOf(f) <- f
}

// completerOf is the completer that stores the results of run id.
func completerOf(id dag.RunID) int { return int(id[len(id)-1]) % numCompleters }

func (e *Engine) completer(l *loop, results <-chan finished) {
	batch := make([]store.TaskResult, 0, e.cfg.BatchSize)
	tenants := make([]string, 0, e.cfg.BatchSize)
	for f := range results {
		batch, tenants = append(batch[:0], f.res), append(tenants[:0], f.tenant)
		rows := f.rows
	fill:
		for len(batch) < e.cfg.BatchSize && rows < maxBatchRows {
			select {
			case f, ok := <-results:
				if !ok {
					break fill
				}
				batch, tenants, rows = append(batch, f.res), append(tenants, f.tenant), rows+f.rows
			default:
				break fill
			}
		}
		e.completeBatch(l, batch, tenants)
	}
}

// rowsOf counts the tasks res may make ready or create, and its own: see
// finished.
func (e *Engine) rowsOf(ct *store.ClaimedTask, res *store.TaskResult) int {
	switch res.Outcome {
	case store.OutcomeMapped:
		return 1 + len(res.Elements)
	case store.OutcomeCompleted, store.OutcomeSkipped:
		if reg := e.lookup(ct.Workflow); reg != nil {
			return 1 + reg.children[stepOf(ct)]
		}
	}
	return 1
}

// completeBatch stores a batch of results, retrying while the store is
// unreachable, and gives their slots back: to the steps the store claimed
// for them (see continueWith), the rest to the poller. Results that cannot
// be stored before Stop gives up on them (its deadline passed) are left
// to lease expiry: another worker re-runs those attempts.
func (e *Engine) completeBatch(l *loop, batch []store.TaskResult, tenants []string) {
	cont := e.continueWith(l)
	if cont {
		defer l.starts.Done()
	}
	e.askReturns(batch)
	var next []store.ClaimedTask
	var outs []store.CompletionOutcome // nil unless the results were stored
	retry := outage.Backoff{Min: 10 * time.Millisecond, Max: outage.MaxBackoff}
	for {
		var err error
		if cont {
			outs, next, err = e.completeAndContinue(l.abandon, batch, len(batch))
		} else {
			outs, err = e.store.CompleteTasks(l.abandon, batch)
		}
		if err == nil {
			e.health.Succeeded()
			for _, r := range batch {
				if r.Outcome == store.OutcomeRetry || r.Outcome == store.OutcomeSleep {
					at := r.WakeAt
					if at.IsZero() {
						at = time.Now().Add(r.Delay)
					}
					l.noteTimer(at)
				}
			}
			break
		}
		outs = nil
		if l.abandon.Err() != nil {
			break // Stop gave up on them: it logged how many
		}
		e.health.Failed("complete tasks", err)
		t := time.NewTimer(retry.Next())
		select {
		case <-l.abandon.Done():
			t.Stop()
		case <-t.C:
		}
		if l.abandon.Err() != nil {
			break
		}
	}
	for i, r := range batch {
		l.slots.Unhold(r.RunID, tenants[i])
	}
	// The claimed steps take their slots before the results give theirs
	// back, so the poller never sees more free than there are.
	l.slots.Stored(len(batch), len(next))
	e.dispatch(l, next)
	l.signal()
	// Waiters are woken last: their runs' tasks are unheld (a Wait that
	// finds a task of its run held here after it registered is woken: see
	// Wait), and the slots are free for the next trigger a woken caller
	// makes (a light tenant's run one at a time finds its kept slot).
	e.afterComplete(batch, outs)
}

// continueWith reports whether to store results so that the store claims
// the steps they make ready (store.Continuer), registered like a trigger
// that starts runs here (see beginStart): not when the engine is told not
// to, or Stop has begun.
func (e *Engine) continueWith(l *loop) bool {
	return !e.cfg.DisableEagerContinue && l.beginStart()
}

// completeAndContinue stores results and has the store claim for this
// worker up to limit of the steps they made ready (store.Continuer), with
// their inputs filled in.
func (e *Engine) completeAndContinue(ctx context.Context, results []store.TaskResult, limit int) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	p := store.ClaimParams{Worker: e.cfg.WorkerID, Signatures: e.servedSignatures(), Limit: limit, Lease: e.cfg.Lease}
	var held map[dag.RunID][]byte
	p.Known, held = e.inputs.known()
	outs, next, err := e.store.CompleteAndContinue(ctx, results, p)
	if err != nil {
		return nil, nil, err
	}
	return outs, e.fillInputs(ctx, next, held), nil
}

// afterComplete wakes the waiters of runs that finished.
func (e *Engine) afterComplete(batch []store.TaskResult, outs []store.CompletionOutcome) {
	for i, o := range outs {
		if o.Outcome == store.OutcomeStale {
			e.log.Debug("dagen: stale result not applied", "run", batch[i].RunID, "step", batch[i].Step, "attempt", batch[i].Attempt)
			continue
		}
		if o.RunStatus.Terminal() {
			e.finished(batch[i].RunID, o.Finished)
		}
	}
}

// cancelRuns stops the steps running here of runs cancelled elsewhere,
// which a heartbeat learned of.
func (e *Engine) cancelRuns(ids []dag.RunID) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	for _, id := range ids {
		if sc := e.runs[id]; sc != nil {
			sc.cancel()
		}
	}
}

// Poll does one round of work in the calling goroutine: it fires due
// schedules and timers, rescues expired leases, claims a batch, executes it
// in order and completes it as a started engine's workers do: the unit
// that stores the results claims for this worker up to a batch of the
// steps they made ready (unless Config.DisableEagerContinue), and Poll
// executes and completes those in turn, until a completion hands none
// back. It returns how many timers and tasks it handled. Poll is how a
// manual engine is driven; it is safe on a started engine too.
func (e *Engine) Poll(ctx context.Context) (int, error) {
	started, err := e.fireSchedules(ctx, e.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("poll: fire schedules: %w", err)
	}
	fired, err := e.store.FireTimers(ctx, e.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("poll: fire timers: %w", err)
	}
	fired += started
	rescued, err := e.store.RescueExpired(ctx, e.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("poll: rescue: %w", err)
	}
	var tasks []store.ClaimedTask
	// An empty signature list would claim every task: an engine that
	// knows none claims nothing.
	if sigs := e.servedSignatures(); len(sigs) > 0 {
		tasks, err = e.claimTasks(ctx, store.ClaimParams{
			Worker: e.cfg.WorkerID, Signatures: sigs, Limit: e.cfg.BatchSize, Lease: e.cfg.Lease,
		})
		if err != nil {
			return 0, fmt.Errorf("poll: claim: %w", err)
		}
	}
	handled := 0
	for len(tasks) > 0 {
		handled += len(tasks)
		results := make([]store.TaskResult, 0, len(tasks))
		for i := range tasks {
			if res, keep := e.execute(ctx, &tasks[i]); keep {
				results = append(results, res)
			}
		}
		if len(results) == 0 {
			break
		}
		var outs []store.CompletionOutcome
		if e.cfg.DisableEagerContinue {
			outs, err = e.store.CompleteTasks(ctx, results)
			tasks = nil
		} else {
			// Up to a batch, as the next round would claim.
			outs, tasks, err = e.completeAndContinue(ctx, results, e.cfg.BatchSize)
		}
		if err != nil {
			return 0, fmt.Errorf("poll: complete: %w", err)
		}
		e.afterComplete(results, outs)
	}
	return fired + rescued + handled, nil
}
