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
	"github.com/dagenhq/dagen/runtime/engine/internal/meters"
	"github.com/dagenhq/dagen/runtime/engine/internal/outage"
	"github.com/dagenhq/dagen/runtime/engine/internal/slots"
	"github.com/dagenhq/dagen/runtime/store"
)

// Host is what a worker needs of the engine it works for: the workflows
// it serves, how their steps run, and whom to tell what.
type Host interface {
	// Signatures returns the task signatures the worker serves.
	Signatures() []string
	// Extra returns, by signature, the slots a claimed task takes beyond
	// its own, for the steps the completion that stores its result will
	// start here (store.ClaimParams.Extra). The map is never changed.
	Extra() map[string]int
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
	// Rows counts the tasks res may make ready or create, and its own
	// (see finished), and how many more steps than one it surely makes
	// ready: its step's children that have no other parent (see
	// completeBatch).
	Rows(ct *store.ClaimedTask, res *store.TaskResult) (rows, more int)
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
	// Meters records metrics; nil records none.
	Meters *meters.Meters

	WorkerID                                               string
	Concurrency, BatchSize                                 int
	PollInterval, IdlePollInterval, SchedulePollInterval   time.Duration
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
	work          chan held
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
		work:       make(chan held, cfg.Concurrency),
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
		Held: w.slots.HeldAttempts, Cancelled: host.CancelRuns, Publish: host.Publish, Rescued: w.Signal,
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

// scheduleLoop fires due schedules until Stop: every SchedulePollInterval
// while the worker leads, and every HeartbeatInterval otherwise, so that
// an idle fleet's schedule queries are the leader's, and a schedule still
// fires, late by at most that, while the lead changes hands.
func (w *Worker) scheduleLoop() {
	t := time.NewTicker(w.cfg.SchedulePollInterval)
	defer t.Stop()
	var last time.Time
	for {
		if w.cfg.Leading.Load() || time.Since(last) >= w.cfg.HeartbeatInterval {
			last = time.Now()
			w.host.FireSchedules(w.ctx)
		}
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
