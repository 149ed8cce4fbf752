package store

import (
	"context"
	"errors"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// ReleasedDetail is the detail of the RESCUED event of a task that
// RetireWorker released: its attempt was cut short by its worker stopping,
// and does not count against the task's retries.
const ReleasedDetail = "worker stopped"

// NotHeldDetail is the detail of the RESCUED event of a task that
// Heartbeat released because its worker does not hold its attempt: the
// answer to the claim never reached the worker, or the worker finished the
// attempt and the store lost its result (a database restored to an older
// history, a lagging standby promoted). Like a released attempt, it does
// not count against the task's retries.
const NotHeldDetail = "attempt not held by its worker"

// UnclaimedDetail is the detail Heartbeat gave such releases when
// heartbeats named only the runs a worker held, and it took every task it
// released for one whose claim never reached its worker; events logged
// then keep it. Heartbeat now logs [NotHeldDetail].
const UnclaimedDetail = "claim never reached its worker"

// HeldAttempt names an attempt a worker holds (executing, or with its
// result not stored yet), as a heartbeat reports it.
type HeldAttempt struct {
	RunID   dag.RunID
	Step    string
	Attempt int
	// Claim is the attempt's ClaimedTask.Claim: what tells the attempt
	// held from another claim of the same attempt number.
	Claim int64
}

// HeldOf returns the attempt ct is.
func HeldOf(ct *ClaimedTask) HeldAttempt {
	return HeldAttempt{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim}
}

// HeldBy returns the attempt r is the result of.
func HeldBy(r *TaskResult) HeldAttempt {
	return HeldAttempt{RunID: r.RunID, Step: r.Step, Attempt: r.Attempt, Claim: r.Claim}
}

// Workers, part of [Execution], keeps the workers that share a store. A
// worker proves it is alive with one narrow heartbeat row; while it is
// alive the store does not rescue its RUNNING tasks, even past their claim
// lease, so long steps need no per-task lease renewal. The leader prunes
// history through it too.
type Workers interface {
	// Heartbeat records that worker is alive until the store's now plus
	// ttl. held are the attempts the worker holds (executing, or with
	// results not stored yet); Heartbeat returns the runs among theirs
	// that were cancelled, so the worker can cancel the steps' contexts.
	//
	// A RUNNING task claimed by worker more than ttl ago whose attempt is
	// not among held (no held attempt has its claim token) is not the
	// worker's: the answer to its claim was lost on the way, or the worker
	// finished the attempt and the store lost the result with the rest of
	// a rolled-back history. The heartbeat that keeps the worker alive
	// would keep it RUNNING forever, so Heartbeat releases it as
	// RetireWorker does, with a RESCUED event whose detail is
	// [NotHeldDetail], whatever else of its run the worker holds.
	Heartbeat(ctx context.Context, worker string, ttl time.Duration, held []HeldAttempt) (cancelled []dag.RunID, err error)

	// RetireWorker removes worker's heartbeat. With release, its RUNNING
	// tasks are handed back at once instead of when their lease ends: each
	// is enqueued again, with a new attempt to come, and a RESCUED event
	// whose detail is [ReleasedDetail]. A released attempt is not a
	// failure: the task is enqueued even when it has no attempts left, and
	// the attempt does not count against its MaxAttempts. (A task of a run
	// that is no longer RUNNING is cancelled instead, unless it is the
	// onfailure task.) It returns how many tasks it released.
	RetireWorker(ctx context.Context, worker string, release bool) (int, error)

	// PruneRuns deletes up to limit runs that finished before cutoff, with
	// their tasks, events and timers. It returns how many it deleted. A
	// store may prune more at once where whole stretches of runs can go
	// together (pgstore drops partitions): limit bounds the runs deleted
	// one by one.
	PruneRuns(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// Elector elects one leader among the worker processes sharing a store,
// and records which worker leads ([LeaderNamer]). Only the leader does
// housekeeping (rescuing expired tasks, pruning history, reporting tasks
// no worker serves); claiming and timers need no leader.
//
// It is the one optional part of a store, the only one the engine looks
// for: a store that one process owns (memstore) has no one to elect among,
// so it lacks Elector and every worker over it leads.
type Elector interface {
	// Lead tries to become, or to stay, the leader for lease from now: a
	// leader that does not call Lead again within lease may lose the lead
	// to the next store that calls it. It is cheap to call often. Once a
	// store led, a leader's duty it runs after losing the lead fails with
	// [ErrNotLeader] and does nothing.
	Lead(ctx context.Context, lease time.Duration) (bool, error)
	// Resign gives up leadership, if held.
	Resign(ctx context.Context) error
	LeaderNamer
}

// ErrNotLeader is wrapped by the error of a leader's duty (rescuing
// expired tasks, pruning history) that a store refused because its
// [Elector] lost the lead since it last called Lead: the old leader's
// duties cannot interleave with the new one's.
var ErrNotLeader = errors.New("this store no longer leads: another took the lead")

// Notifier, part of [Execution], tells idle workers that work was
// enqueued. Notifications are hints: polling stays the truth, and a worker
// must not rely on seeing every one.
type Notifier interface {
	// Subscribe returns a channel that receives a value when work may be
	// ready. The subscription ends, and the channel is no longer written,
	// when ctx is done.
	Subscribe(ctx context.Context) (<-chan struct{}, error)
}

// CancelNotifier, part of [Execution], tells workers at once that a run
// was cancelled, so that the run's steps executing on them see their ctx
// done within moments rather than at the worker's next heartbeat. Like
// Notifier's, these notifications are hints: a worker must not rely on
// seeing every one, and [Workers.Heartbeat] stays the truth. A run that
// fails is not announced: its running steps are left to finish.
//
// A store may serve the Notifier and CancelNotifier subscriptions with
// one listener (on Postgres, one connection).
type CancelNotifier interface {
	// SubscribeCancels returns a channel that receives the id of each run
	// cancelled (by [Execution.CancelRun], in any process sharing the store)
	// after the cancellation is stored. Ids may be dropped when the
	// receiver falls behind, or when the store loses its listener for a
	// while. The subscription ends, and the channel is no longer written,
	// when ctx is done.
	SubscribeCancels(ctx context.Context) (<-chan dag.RunID, error)
}

// StatusReader, part of [Execution], reads a run's status alone, without
// its input or tasks. The engine polls the status of the runs it waits for
// through it, and reads a run whole once it has finished.
type StatusReader interface {
	// RunStatus returns the status of a run. An unknown id is an error
	// wrapping [ErrRunNotFound].
	RunStatus(ctx context.Context, id dag.RunID) (RunStatus, error)
}

// RunReader, part of [Execution], reads a run and its tasks together, in
// one round trip on Postgres. The engine reads the runs it waits for
// through it.
type RunReader interface {
	// ReadRun returns the run and its tasks, in creation order, as GetRun
	// and ListTasks do. An unknown id is an error wrapping
	// [ErrRunNotFound].
	ReadRun(ctx context.Context, id dag.RunID) (Run, []Task, error)
}

// Starter, part of [Execution], hands a new run's first steps straight to
// the worker that creates it. The engine starts runs through it when it
// has free slots, so those steps skip the ready queue: no wait for a poll,
// and no claim of their own.
type Starter interface {
	// StartRuns creates runs as CreateRuns does and, in the same unit,
	// claims for p.Worker the roots the fair queue would hand out next,
	// instead of enqueuing them. It looks at the first root of each
	// tenant of the runs, in run order, then task order, for up to
	// p.Limit tenants, and only at roots whose signature is in
	// p.Signatures (all when it is empty); of those roots it claims the ones whose
	// tenant has nothing in the ready queue past the head block (its block
	// pointer at most one past the frontier: see BlockLength). So a tenant
	// with a backlog gets no head start over it, nor over other tenants,
	// and a tenant gets at most one. A claimed root is RUNNING at attempt
	// 1 with a lease of p.Lease, its QUEUED and STARTED events logged,
	// exactly as if ClaimTasks had taken it from the queue. The roots not
	// claimed are enqueued. It returns the claimed tasks, in run order.
	StartRuns(ctx context.Context, runs []NewRun, p ClaimParams) ([]ClaimedTask, error)
}
