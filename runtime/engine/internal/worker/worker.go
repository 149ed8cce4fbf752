package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// MaxBatchRows bounds the tasks one batch of results may make ready or
// create, as the engine counts them (see finished): a batch stops growing
// once it reaches this many, short of BatchSize. Results of a fan-out's
// first step, 512 of which made 25,600 children ready in one transaction,
// then go in batches of some eighty: the memory a completion holds stays
// within a few megabytes, and no transaction locks its runs for long.
// One result that creates more (a mapped step of 100,000 elements) still
// goes alone.
const MaxBatchRows = 4096

// finished is an attempt's result on its way to a completer, with rows:
// one for the task and one for each task it may make ready or create (its
// step's children, or its elements).
type finished struct {
	res    store.TaskResult
	rows   int
	tenant string // the run's: see laneOf
}

// Host is what a worker needs of the engine it works for: the workflows
// it serves, how their steps run, and whom to tell what.
type Host interface {
	// Signatures returns the task signatures the worker serves.
	Signatures() []string
	// Claim claims ready tasks (Store.ClaimTasks), with their inputs.
	Claim(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error)
	// CompleteAndContinue stores results and claims for this worker up to
	// limit of the steps they made ready (Store.CompleteAndContinue), with
	// their inputs.
	CompleteAndContinue(ctx context.Context, results []store.TaskResult, limit int) ([]store.CompletionOutcome, []store.ClaimedTask, error)
	// Execute runs a claimed task's step; keep is false when Stop cut the
	// attempt short, and its result is to be dropped.
	Execute(ctx context.Context, ct *store.ClaimedTask) (res store.TaskResult, keep bool)
	// Goexited is the result of a step that ended its goroutine
	// (runtime.Goexit) instead of returning.
	Goexited(ctx context.Context, ct *store.ClaimedTask) (res store.TaskResult, keep bool)
	// Rows counts the tasks res may make ready or create, and its own:
	// see finished.
	Rows(ct *store.ClaimedTask, res *store.TaskResult) int
	// AskReturns marks the results of runs someone waits for, so that the
	// completion that finishes one reads it back.
	AskReturns(batch []store.TaskResult)
	// Stored is told of a batch of results stored (outs is nil when they
	// were given up): it wakes the waiters of runs that finished.
	Stored(batch []store.TaskResult, outs []store.CompletionOutcome)
	// Publish tells the store what the worker serves, before each
	// heartbeat.
	Publish(ctx context.Context)
	// CancelRuns stops the steps running here of runs cancelled
	// elsewhere.
	CancelRuns(ids []dag.RunID)
	// FireSchedules starts the runs of due schedules, and logs what
	// failed: the schedules stay due.
	FireSchedules(ctx context.Context)
}

// Config is how a worker works.
type Config struct {
	Store   store.Store
	Elector store.Elector // nil: every worker leads
	Log     *slog.Logger
	Health  *outage.Health
	// Leading is set while the worker leads housekeeping.
	Leading *atomic.Bool

	WorkerID                                               string
	Concurrency, BatchSize                                 int
	PollInterval, SchedulePollInterval                     time.Duration
	HeartbeatInterval, Lease, Retention                    time.Duration
	DisableEagerStart, DisableEagerContinue, DisableNotify bool
}

// ErrStopped is the cause with which Stop cancels the steps still running
// when its deadline passes.
var ErrStopped = errors.New("engine stopped")

// Worker is a running worker: a poller claiming tasks (and a claimer
// beside it under load), executors started for the tasks it claims,
// completers batching results back to the store, a keeper that heartbeats
// and, while leading, does housekeeping, and a loop that fires due
// schedules.
type Worker struct {
	cfg  Config
	host Host

	ctx    context.Context         // cancelled at the end of Stop: steps see it
	cancel context.CancelCauseFunc // cancels ctx, with ErrStopped
	// abandon is the context results are stored under: unlike ctx it
	// outlives the drain, and is cancelled only when Stop's deadline
	// passed, so a store that does not answer cannot hold Stop (or the
	// pool's Close) past it. Results not stored then are left to their
	// leases.
	abandon       context.Context
	abandonCancel context.CancelFunc
	stopPoll      chan struct{}   // closed by BeginStop: claim no more
	alongside     chan struct{}   // the poller's full claims: see claimAlongside
	wake          chan struct{}   // a hint that work may be ready or slots free
	notify        <-chan struct{} // the store's notifications, or nil
	work          chan *store.ClaimedTask
	results       [numCompleters]chan finished // by run: see completerOf
	light         chan finished                // the light lane: see laneOf
	slots         *slots.Slots                 // the tasks held, and the slots they take
	executors     atomic.Int64                 // executor goroutines running: see dispatch
	// Triggers that start runs' first steps here (see StartRuns) register
	// in starts, until BeginStop sets stopped: work is closed only after
	// them.
	startMu    sync.Mutex
	stopped    bool
	starts     sync.WaitGroup
	execWG     sync.WaitGroup
	done       chan struct{}        // closed when poller, executors and completer are gone
	keeper     *housekeeping.Keeper // heartbeats, and housekeeping while leading
	keeperDone chan struct{}        // closed when the keeper is gone

	timerMu   sync.Mutex
	nextTimer time.Time // earliest known pending wake time, zero if none
}

// Start starts a worker in the background, until Stop. ctx is used only
// for values: cancelling it does not stop the worker.
func Start(ctx context.Context, cfg Config, host Host) *Worker {
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	actx, acancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &Worker{
		cfg: cfg, host: host,
		ctx: lctx, cancel: cancel,
		abandon: actx, abandonCancel: acancel,
		stopPoll:   make(chan struct{}),
		alongside:  make(chan struct{}, 1),
		wake:       make(chan struct{}, 1),
		work:       make(chan *store.ClaimedTask, cfg.Concurrency),
		done:       make(chan struct{}),
		keeperDone: make(chan struct{}),
		slots:      slots.New(cfg.Concurrency),
	}
	if !cfg.DisableNotify {
		ch, err := cfg.Store.Subscribe(lctx)
		if err != nil {
			cfg.Log.Warn("dagen: store notifications unavailable; polling only", "worker", cfg.WorkerID, "err", err)
		}
		w.notify = ch
		// A hint that saves waiting for the heartbeat, which stays the truth.
		if ch, err := cfg.Store.SubscribeCancels(lctx); err != nil {
			cfg.Log.Warn("dagen: store cancel notifications unavailable; cancellations reach steps by heartbeat", "worker", cfg.WorkerID, "err", err)
		} else {
			go w.cancelNotified(ch)
		}
	}
	for i := range w.results {
		w.results[i] = make(chan finished, cfg.Concurrency) // never more results than tasks held
	}
	w.light = make(chan finished, cfg.Concurrency)
	w.keeper = housekeeping.New(housekeeping.Config{
		Store: cfg.Store, Elector: cfg.Elector, Worker: cfg.WorkerID,
		Interval: cfg.HeartbeatInterval, Lease: cfg.Lease, Retention: cfg.Retention, Batch: cfg.BatchSize,
		Log: cfg.Log, Health: cfg.Health, Leading: cfg.Leading,
		Held: w.slots.HeldRuns, Cancelled: host.CancelRuns, Publish: host.Publish, Rescued: w.Signal,
	})
	w.keeper.Beat(lctx) // register before claiming, so the first claims are covered
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		var wg sync.WaitGroup
		wg.Go(w.claimAlongside)
		w.poller()
		wg.Wait()
	}()
	completeDone := make(chan struct{})
	var completeWG sync.WaitGroup
	for _, results := range w.lanes() {
		completeWG.Add(1)
		go func() { defer completeWG.Done(); w.completer(results) }()
	}
	go func() { completeWG.Wait(); close(completeDone) }()
	go func() { defer close(w.keeperDone); w.keeper.Run(w.ctx, w.stopPoll) }()
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); w.scheduleLoop() }()
	go func() {
		<-pollDone
		<-schedDone
		w.starts.Wait() // BeginStop set stopped before the poller could end
		close(w.work)
		w.execWG.Wait()
		for _, results := range w.lanes() {
			close(results)
		}
		<-completeDone
		close(w.done)
	}()
	return w
}

// BeginStop stops claiming and starting steps here; Stop then drains.
// It is called once, before Stop.
func (w *Worker) BeginStop() {
	w.startMu.Lock()
	w.stopped = true
	w.startMu.Unlock()
	close(w.stopPoll)
}

// Stop gives up leadership, lets the steps in flight finish and stores
// their results, heartbeating all the while so that their tasks stay with
// this worker, then retires the worker. When ctx ends first, the steps'
// contexts are cancelled (with ErrStopped) and Stop returns without
// waiting for them: their tasks are released to other workers at once.
// BeginStop must have been called.
func (w *Worker) Stop(ctx context.Context) error {
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
	case <-w.done:
	case <-drain.Done():
		running, unstored := w.slots.Executing(), w.slots.Pending()
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded // the drain's share of it passed
		}
		err = fmt.Errorf("stop: %d steps still running and %d results unstored when the deadline passed: %w",
			running, unstored, cause)
		if unstored > 0 {
			w.cfg.Log.Warn("dagen: stopping: results not stored by the deadline are left to their leases; another worker runs those attempts again",
				"worker", w.cfg.WorkerID, "results", unstored)
		}
		w.abandonCancel()
	}
	w.cancel(ErrStopped)
	<-w.keeperDone
	if n, rerr := w.cfg.Store.RetireWorker(cleanup, w.cfg.WorkerID, true); rerr != nil {
		err = errors.Join(err, fmt.Errorf("stop: retire worker: %w", rerr))
	} else if n > 0 {
		w.cfg.Log.Warn("dagen: released unfinished tasks to other workers", "worker", w.cfg.WorkerID, "tasks", n)
	}
	if w.cfg.Elector != nil {
		if rerr := w.cfg.Elector.Resign(cleanup); rerr != nil {
			err = errors.Join(err, fmt.Errorf("stop: resign leadership: %w", rerr))
		}
	}
	w.abandonCancel()
	return err
}

// stopReserve is the most of Stop's time kept to release the worker's
// tasks, and what Stop gives that when its ctx has no deadline.
const stopReserve = time.Second

// Executors is how many executor goroutines are running: none while the
// worker has no step to run.
func (w *Worker) Executors() int64 { return w.executors.Load() }

// Holds reports whether the worker holds a task of run id, claimed and
// not yet stored: should that task finish the run, its completion tells
// the host (Stored) after it unholds it.
func (w *Worker) Holds(id dag.RunID) bool { return w.slots.Holds(id) }

// cancelNotified stops the steps running here of the runs the store
// announces cancelled, until the worker's context ends.
func (w *Worker) cancelNotified(ids <-chan dag.RunID) {
	for {
		select {
		case <-w.ctx.Done():
			return
		case id := <-ids:
			w.host.CancelRuns([]dag.RunID{id})
		}
	}
}

// scheduleLoop fires due schedules every SchedulePollInterval until Stop.
func (w *Worker) scheduleLoop() {
	t := time.NewTicker(w.cfg.SchedulePollInterval)
	defer t.Stop()
	for {
		w.host.FireSchedules(w.ctx)
		select {
		case <-w.stopPoll:
			return
		case <-t.C:
		}
	}
}

// Signal tells the poller that work may be ready, or slots free.
func (w *Worker) Signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// noteTimer records a wake time the poller should not sleep past.
func (w *Worker) noteTimer(at time.Time) {
	w.timerMu.Lock()
	earlier := w.nextTimer.IsZero() || at.Before(w.nextTimer)
	if earlier {
		w.nextTimer = at
	}
	w.timerMu.Unlock()
	if earlier {
		w.Signal()
	}
}

func (w *Worker) timerDue(now time.Time) (due bool, next time.Time) {
	w.timerMu.Lock()
	defer w.timerMu.Unlock()
	return !w.nextTimer.IsZero() && !now.Before(w.nextTimer), w.nextTimer
}

func (w *Worker) poller() {
	var lastTimers time.Time
	retry := outage.Backoff{Min: w.cfg.PollInterval, Max: outage.MaxBackoff}
	for {
		select {
		case <-w.stopPoll:
			return
		default:
		}
		// Claim first, then fire timers: a wake-up is most often for a task
		// just enqueued, which should not wait for the timer queries.
		full, err := w.claim()
		if err != nil {
			w.cfg.Health.Failed("claim tasks", err)
			sleepFor(w.ctx, retry.Next(), w.stopPoll)
			continue
		}
		now := time.Now()
		// A timer due on this host's clock that the store does not fire is
		// not due on the store's clock (the clocks differ): waiting for it
		// by this clock would poll without a pause until the store's clock
		// catches up.
		notFired := false
		if due, _ := w.timerDue(now); due || now.Sub(lastTimers) >= w.cfg.PollInterval {
			lastTimers = now
			fired, err := w.fireTimers()
			if err != nil {
				// Every error path waits: a timer that stays due must not
				// turn a store that fails into a busy loop.
				w.cfg.Health.Failed("fire timers", err)
				sleepFor(w.ctx, retry.Next(), w.stopPoll)
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
			case w.alongside <- struct{}{}:
			default:
			}
			continue
		}
		wait := w.cfg.PollInterval
		if _, next := w.timerDue(now); !next.IsZero() && !notFired {
			wait = max(min(wait, time.Until(next)), 0)
		}
		t := time.NewTimer(wait)
		select {
		case <-w.stopPoll:
			t.Stop()
			return
		case <-w.wake:
		case <-w.notify:
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
func (w *Worker) claim() (full bool, err error) {
	// An empty signature list would claim every task: a worker that
	// knows none claims nothing.
	sigs := w.host.Signatures()
	if len(sigs) == 0 {
		return false, nil
	}
	limit := w.slots.Take(w.slots.ClaimCapacity(), func(free, held int) int {
		// Under load, wait for a worthwhile batch rather than claiming a
		// few at a time.
		if n := min(free, w.cfg.BatchSize); held == 0 || n >= max(1, w.cfg.BatchSize/4) {
			return n
		}
		return 0
	})
	if limit <= 0 {
		return false, nil
	}
	tasks, err := w.host.Claim(w.ctx, store.ClaimParams{
		Worker: w.cfg.WorkerID, Signatures: sigs, Limit: limit, Lease: w.cfg.Lease,
	})
	w.slots.Unused(limit - len(tasks))
	if err != nil {
		return false, err
	}
	w.cfg.Health.Succeeded()
	w.dispatch(tasks)
	return len(tasks) == limit, nil
}

// fireTimers fires due timers, learns when the next one is due, and
// returns how many it fired. On an error, the timers fired before it count
// as fired only when some were.
func (w *Worker) fireTimers() (int, error) {
	fired := 0
	for {
		n, err := w.cfg.Store.FireTimers(w.ctx, w.cfg.BatchSize)
		if err != nil {
			if fired > 0 {
				return fired, nil // claim what they enqueued; the next round fails again if the store does
			}
			return 0, err
		}
		fired += n
		if n < w.cfg.BatchSize {
			break
		}
	}
	at, ok, err := w.cfg.Store.NextTimer(w.ctx)
	if err != nil {
		if fired > 0 {
			return fired, nil
		}
		return 0, err
	}
	w.cfg.Health.Succeeded()
	w.timerMu.Lock()
	w.nextTimer = time.Time{}
	if ok {
		w.nextTimer = at
	}
	w.timerMu.Unlock()
	return fired, nil
}

// dispatch hands claimed tasks to the executors, starting as many more as
// there are tasks no executor is free for. Executors are not kept idle: an
// executor that finds no task waiting ends. A pool of Concurrency idle
// goroutines costs CPU for nothing: the garbage collector scans their
// stacks and shrinks them, and each step grows its executor's stack back
// (see docs/performance.md, "Executors are not kept idle").
func (w *Worker) dispatch(tasks []store.ClaimedTask) {
	w.slots.Hold(tasks)
	for i := range tasks {
		w.work <- &tasks[i] // never blocks: work holds Concurrency
	}
	// Read after the sends: an executor that ends looks at work once more
	// after it stopped counting itself, so every task is picked up.
	for started := 0; started < len(tasks); {
		running := w.executors.Load()
		if running >= int64(w.cfg.Concurrency) {
			return // the running executors take the rest
		}
		if w.executors.CompareAndSwap(running, running+1) {
			started++
			w.execWG.Add(1)
			go w.executor()
		}
	}
}

// executor runs tasks from work until none is waiting.
func (w *Worker) executor() {
	defer w.execWG.Done()
	for {
		var ct *store.ClaimedTask
		var ok bool
		select {
		case ct, ok = <-w.work:
		default:
			w.executors.Add(-1)
			select {
			case ct, ok = <-w.work: // sent as we were ending: dispatch may not have started anyone for it
				w.executors.Add(1)
			default:
				return
			}
		}
		if !ok {
			w.executors.Add(-1)
			return
		}
		w.run(ct)
	}
}

// run executes a claimed task and hands its result to a completer. A step
// that calls runtime.Goexit (t.FailNow in a helper, a log.Fatal-like
// wrapper that exits the goroutine) ends this goroutine, recover or not:
// run's deferred call then hands on a failed attempt, as for a panic, and
// starts an executor in this one's place, so neither the task nor the slot
// is lost.
func (w *Worker) run(ct *store.ClaimedTask) {
	returned := false
	defer func() {
		if returned {
			return
		}
		res, keep := w.host.Goexited(w.ctx, ct)
		w.handOn(finished{res, 1, ct.Tenant}, keep)
		w.execWG.Add(1)
		go w.executor() // counted in w.executors already: this one's place
	}()
	res, keep := w.host.Execute(w.ctx, ct)
	returned = true
	w.handOn(finished{res, w.host.Rows(ct, &res), ct.Tenant}, keep)
}

// handOn passes a finished attempt's result to its completer, or, when
// Stop cut the attempt short (keep is false), drops it: RetireWorker
// releases the task.
func (w *Worker) handOn(f finished, keep bool) {
	res := f.res
	w.slots.Finished(res.RunID, f.tenant, keep)
	if !keep {
		w.cfg.Log.Info("dagen: step cut short by Stop; its task goes to another worker",
			"worker", w.cfg.WorkerID, "run", res.RunID, "step", res.Step, "attempt", res.Attempt)
		return
	}
	w.Signal()
	w.laneOf(f) <- f
}

// completerOf is the completer that stores the results of run id.
func completerOf(id dag.RunID) int { return int(id[len(id)-1]) % numCompleters }

func (w *Worker) completer(results <-chan finished) {
	batch := make([]store.TaskResult, 0, w.cfg.BatchSize)
	tenants := make([]string, 0, w.cfg.BatchSize)
	for f := range results {
		batch, tenants = append(batch[:0], f.res), append(tenants[:0], f.tenant)
		rows := f.rows
	fill:
		for len(batch) < w.cfg.BatchSize && rows < MaxBatchRows {
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
		w.completeBatch(batch, tenants)
	}
}

// completeBatch stores a batch of results, retrying while the store is
// unreachable, and gives their slots back: to the steps the store claimed
// for them (see continueWith), the rest to the poller. Results that cannot
// be stored before Stop gives up on them (its deadline passed) are left
// to lease expiry: another worker re-runs those attempts.
func (w *Worker) completeBatch(batch []store.TaskResult, tenants []string) {
	cont := w.continueWith()
	if cont {
		defer w.starts.Done()
	}
	w.host.AskReturns(batch)
	var next []store.ClaimedTask
	var outs []store.CompletionOutcome // nil unless the results were stored
	retry := outage.Backoff{Min: 10 * time.Millisecond, Max: outage.MaxBackoff}
	for {
		var err error
		if cont {
			outs, next, err = w.host.CompleteAndContinue(w.abandon, batch, len(batch))
		} else {
			outs, err = w.cfg.Store.CompleteTasks(w.abandon, batch)
		}
		if err == nil {
			w.cfg.Health.Succeeded()
			for _, r := range batch {
				if r.Outcome == store.OutcomeRetry || r.Outcome == store.OutcomeSleep {
					at := r.WakeAt
					if at.IsZero() {
						at = time.Now().Add(r.Delay)
					}
					w.noteTimer(at)
				}
			}
			break
		}
		outs = nil
		if w.abandon.Err() != nil {
			break // Stop gave up on them: it logged how many
		}
		w.cfg.Health.Failed("complete tasks", err)
		t := time.NewTimer(retry.Next())
		select {
		case <-w.abandon.Done():
			t.Stop()
		case <-t.C:
		}
		if w.abandon.Err() != nil {
			break
		}
	}
	for i, r := range batch {
		w.slots.Unhold(r.RunID, tenants[i])
	}
	// The claimed steps take their slots before the results give theirs
	// back, so the poller never sees more free than there are.
	w.slots.Stored(len(batch), len(next))
	w.dispatch(next)
	w.Signal()
	// Waiters are woken last: their runs' tasks are unheld (a Wait that
	// finds a task of its run held here after it registered is woken: see
	// Wait), and the slots are free for the next trigger a woken caller
	// makes (a light tenant's run one at a time finds its kept slot).
	w.host.Stored(batch, outs)
}

// continueWith reports whether to store results so that the store claims
// the steps they make ready (store.Continuer), registered like a trigger
// that starts runs here (see beginStart): not when the engine is told not
// to, or Stop has begun.
func (w *Worker) continueWith() bool {
	return !w.cfg.DisableEagerContinue && w.beginStart()
}

// sleepFor waits d, or until ctx ends or wake closes, without a timer
// leak.
func sleepFor(ctx context.Context, d time.Duration, wake <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-wake:
	}
}
