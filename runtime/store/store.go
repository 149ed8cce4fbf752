package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// BlockLength is the width of one block of the fair ready queue. A queue
// entry's id is groupID + BlockLength*block, where every tenant has a
// sequential group id and its own block pointer, moved up to the
// consumption frontier when it enqueues. Claiming in id order then serves
// tenants round-robin, one entry per tenant per block.
const BlockLength = 1 << 20

// Store is what the engine, the console and the dagen command need from
// storage: three facets, every one required, so that whatever holds a
// Store has all of it and never asks a store what it can do.
//
//   - [Execution]: the workers' hot path, from creating runs to storing
//     results, heartbeats and housekeeping.
//   - [Admin]: what operators see and do (list, count, cancel and retry
//     runs; the workers and the backlog; what a deploy would strand).
//   - [Triggers]: what moves runs from outside: schedules and signals.
//
// Leader election ([Elector]) is the one optional part.
//
// Implementations must be safe for concurrent use by many goroutines and,
// for shared stores, by many processes. A store that wraps another (to
// count calls, say) embeds a Store and so keeps every facet; it keeps
// leader election only by passing [Elector] through.
type Store interface {
	Execution
	Admin
	Triggers
}

// Execution is the workers' hot path: create runs (and start their first
// steps here: [Starter]), claim ready tasks, store results (and claim the
// steps they made ready: [Continuer]), fire timers, rescue expired leases,
// cancel a run, read runs (whole: [RunReader]; their status alone:
// [StatusReader]), wake idle workers ([Notifier]) and tell them of
// cancellations ([CancelNotifier]), and keep workers alive, retire them and
// prune history ([Workers]).
type Execution interface {
	Starter
	Continuer
	RunReader
	StatusReader
	Notifier
	CancelNotifier
	Workers

	// CreateRuns creates the runs with all their tasks and enqueues each
	// run's root tasks (those without parents), all in one unit: either
	// every run is created or none is. A run id that exists already is
	// an error wrapping [ErrRunExists]; a run whose tasks do not form a
	// DAG, or whose tenant [ValidTenant] rejects, is an error wrapping
	// [ErrInvalidRun] (and then [ErrInvalidTenant]).
	CreateRuns(ctx context.Context, runs []NewRun) error

	// ClaimTasks claims up to p.Limit ready tasks whose signatures are in
	// p.Signatures, in fair queue order; tasks of other signatures stay
	// queued for a worker that serves them. Each claimed task is RUNNING
	// with its attempt incremented and a lease of p.Lease, and carries what
	// the step needs: the run input and its parents' outputs, by name.
	ClaimTasks(ctx context.Context, p ClaimParams) ([]ClaimedTask, error)

	// CompleteTasks applies a batch of attempt results in one unit. A result
	// whose task is no longer RUNNING at that attempt, under that claim
	// (TaskResult.Claim), is not applied (its Outcome is Stale); the others are. Completing or skipping a task counts
	// its children's pending parents down and enqueues the children that
	// reach zero, exactly once; the run finishes when its last task does.
	// Failing a task fails its run, cancels the run's pending work and
	// enqueues the run's onfailure task, if it has one. The returned slice
	// has one entry per result, in order.
	CompleteTasks(ctx context.Context, results []TaskResult) ([]CompletionOutcome, error)

	// FireTimers fires up to limit timers that are due on the store's clock,
	// earliest first: a sleeping task completes (and its children are
	// resolved), a task waiting out a retry delay is enqueued again. It
	// returns how many fired.
	FireTimers(ctx context.Context, limit int) (int, error)

	// NextTimer returns the earliest pending wake time, and false if no timer
	// is pending.
	NextTimer(ctx context.Context) (time.Time, bool, error)

	// RescueExpired re-enqueues up to limit RUNNING tasks whose lease ended,
	// with a new attempt, or fails them (and their run) when they have no
	// attempts left. It returns how many it rescued or failed.
	RescueExpired(ctx context.Context, limit int) (int, error)

	// CancelRun cancels a QUEUED or RUNNING run: its tasks that are not
	// finished become CANCELLED (so completions of running attempts are
	// stale), its queue entries and timers are removed, and a QUEUED run
	// gives up its place (a RUNNING capped run its room). Cancelling a
	// finished run is a no-op that reports false.
	CancelRun(ctx context.Context, id dag.RunID) (bool, error)

	// GetRun returns a run. An unknown id is an error wrapping
	// [ErrRunNotFound].
	GetRun(ctx context.Context, id dag.RunID) (Run, error)

	// ListTasks returns every task of a run, in the order they were
	// created, but for elements: a mapped task's elements come right
	// after it, in element order. An unknown id is an error wrapping
	// [ErrRunNotFound].
	ListTasks(ctx context.Context, id dag.RunID) ([]Task, error)

	// ListEvents returns the event log of a run, oldest first: in the
	// order the store logged the events. Every store logs the events of
	// one call (a CompleteTasks batch, a FireTimers or RescueExpired
	// round, a signal, a cancellation) in one order, the transition
	// core's, for each run:
	//
	//   - first the COMPLETED events of tasks that completed with their
	//     own result (an attempt's output, a held signal, their elements'
	//     outputs), in the order of the results;
	//   - then the other events of the call's decisions, in decision
	//     order: results in their order, timers in wake order, leases in
	//     lease order (a sleep's WOKEN and COMPLETED, a SKIPPED, FAILED,
	//     RETRYING, SLEEPING, AWAITING, MAPPED, RESCUED, SIGNALLED,
	//     CANCELLED, a deadline's FAILED);
	//   - then CANCELLED for each task that the run's end cancels, in the
	//     run's task order (a failure spares RUNNING attempts and the
	//     onfailure task);
	//   - then QUEUED for the tasks queued again and the onfailure task,
	//     for the elements mapped or admitted, and last for the children
	//     made ready, in the order of the parent that brought each to
	//     zero.
	//
	// An unknown id is an error wrapping [ErrRunNotFound].
	ListEvents(ctx context.Context, id dag.RunID) ([]Event, error)
}

// Admin is what operators see and do: list, count and cancel runs
// ([Operator]), retry finished ones ([Retrier]), see the workers and the
// backlog ([Fleet]), and know what code can run the tasks held, so a
// deploy strands no run ([Deploys], read back by [SignatureReader]).
// Workers publish what they serve through Deploys; the rest is for
// operators, never on the hot path.
type Admin interface {
	Operator
	Retrier
	Fleet
	Deploys
	SignatureReader
	FlowControl
}

// Triggers is what moves runs from outside them: schedules start runs at
// their slots ([Scheduler]), signals resolve the waits of runs under way
// ([Signaler]), and both kinds of trigger may be made in the caller's own
// database transaction ([TxTriggers]). Timers of sleeps and retry delays
// are the hot path's ([Execution]).
type Triggers interface {
	Scheduler
	Signaler
	TxTriggers
}

// Errors callers branch on.
var (
	// ErrRunNotFound is returned for a run id the store does not know.
	ErrRunNotFound = errors.New("run not found")
	// ErrRunExists is returned when a run is created twice.
	ErrRunExists = errors.New("run already exists")
	// ErrInvalidRun is returned for a run whose tasks do not form a DAG
	// (duplicate names, unknown parents, cycles), that lacks required
	// fields or whose tenant is not valid (see [ValidTenant]).
	ErrInvalidRun = errors.New("invalid run")
)

// RunStatus is the state of a run.
type RunStatus string

// Run states. QUEUED and RUNNING are the non-terminal states.
const (
	// RunQueued is a run waiting for its concurrency key's cap to admit it
	// (NewRun.Concurrency): none of its tasks is queued yet.
	RunQueued    RunStatus = "QUEUED"
	RunRunning   RunStatus = "RUNNING"
	RunCompleted RunStatus = "COMPLETED"
	RunFailed    RunStatus = "FAILED"
	RunCancelled RunStatus = "CANCELLED"
)

// RunStatuses lists every run status, the non-terminal ones first.
var RunStatuses = []RunStatus{RunQueued, RunRunning, RunCompleted, RunFailed, RunCancelled}

// Terminal reports whether the run has finished.
func (s RunStatus) Terminal() bool { return s != RunRunning && s != RunQueued && s != "" }

// TaskStatus is the state of one step of one run.
type TaskStatus string

// Task states. COMPLETED, SKIPPED, FAILED and CANCELLED are terminal.
const (
	TaskPending   TaskStatus = "PENDING"   // waiting for parents
	TaskQueued    TaskStatus = "QUEUED"    // in the ready queue
	TaskRunning   TaskStatus = "RUNNING"   // claimed by a worker
	TaskSleeping  TaskStatus = "SLEEPING"  // a sleep step waiting for its timer
	TaskBackoff   TaskStatus = "BACKOFF"   // waiting out a retry delay
	TaskMapping   TaskStatus = "MAPPING"   // a mapped step whose elements are under way
	TaskCompleted TaskStatus = "COMPLETED" // ran and stored its output
	TaskSkipped   TaskStatus = "SKIPPED"   // not run (cascade or predicate)
	TaskFailed    TaskStatus = "FAILED"    // failed for good
	TaskCancelled TaskStatus = "CANCELLED" // its run was cancelled or failed first
)

// Terminal reports whether the task has finished.
func (s TaskStatus) Terminal() bool {
	switch s {
	case TaskCompleted, TaskSkipped, TaskFailed, TaskCancelled:
		return true
	}
	return false
}

// Resolved reports whether a child may count this parent as done.
func (s TaskStatus) Resolved() bool { return s == TaskCompleted || s == TaskSkipped }

// TaskKind says how the engine executes a task.
type TaskKind string

// Task kinds.
const (
	KindStep      TaskKind = "step"      // a function with an output
	KindSleep     TaskKind = "sleep"     // computes a wake time, then sleeps
	KindOnFailure TaskKind = "onfailure" // runs once when the run fails
	// KindMap is a mapped step (each=): once its parents are resolved it is
	// claimed like a step, and the engine either skips or completes it, or
	// maps it (OutcomeMapped): the store then creates one KindElement task
	// per element and the mapped task is MAPPING until they are all
	// resolved. It then completes with their outputs, collected in
	// element order (see [CollectOutputs]), and its children count down.
	KindMap TaskKind = "map"
	// KindElement is one element of a mapped step, named
	// [ElementName](step, index). It has the mapped task's signature,
	// parents and attempts; its claim hands the element as the output of
	// the parent the step maps. Elements do not count toward the run's
	// completion (their mapped task does), and failing one for good fails
	// the run.
	KindElement TaskKind = "element"
)

// NewRun is a run to create.
type NewRun struct {
	ID          dag.RunID
	Workflow    string // stored workflow name
	Fingerprint string // DAG shape of the definition that created it
	Tenant      string // see ValidTenant
	Input       []byte // encoded workflow input
	Tasks       []NewTask
	// Key is the run's idempotency key, or empty (see ValidKey): while a
	// run of the same workflow and tenant with this key is retained, the
	// run is not created, and CreateRuns sets Existing to that run's id
	// instead. It is the one field CreateRuns writes; a run later in the
	// same call with the key of an earlier one gets the earlier one's id.
	Key      string
	Existing dag.RunID
	// Concurrency, when above zero, caps the runs of the workflow with
	// the same ConcurrencyKey (of any tenant) that are RUNNING at once:
	// a run over the cap is created QUEUED, with no task queued, and is
	// admitted (RUNNING, its roots queued) in run id order, in the
	// transaction that finishes a RUNNING run of its key. The cap is the
	// one of the latest run created for the key. See ValidKey for the key.
	Concurrency    int
	ConcurrencyKey string
	// Timeout, when above zero, is the run's deadline counted from its
	// creation: see [DeadlineStep].
	Timeout time.Duration
	// TraceParent is the W3C traceparent of the span the run was
	// triggered under, or empty. The store keeps it with the run and
	// hands it back with every claim of the run's tasks
	// (ClaimedTask.TraceParent), so that the steps' spans, on any worker,
	// join the trigger's trace.
	TraceParent string
	// Parent, when set, is the task attempt that started the run as its
	// child (OutcomeChild): when the run ends, that task is resolved
	// with it. The engine sets it; a trigger leaves it nil.
	Parent *ParentLink
	// Priority, 0 to MaxPriority, orders the run's ready tasks before
	// the same tenant's tasks of a lower priority (see [FlowControl]).
	Priority int
}

// DeadlineStep is the Step of the failure of a run that timed out
// (NewRun.Timeout), and of its FAILED event. At the deadline a QUEUED or
// RUNNING run fails with the message [TimedOut] gives; all its unfinished
// tasks but the onfailure task are cancelled, RUNNING ones included (the
// workers running them hear of it as of a cancelled run: see
// [Workers.Heartbeat]), and its onfailure task is queued.
const DeadlineStep = dag.DeadlineStep

// TimedOut is the failure message of a run that timed out after d:
// "timed out after 48h".
func TimedOut(d time.Duration) string { return "timed out after " + ShortDuration(d) }

// ShortDuration formats d as time.Duration.String does, without the zero
// minutes and seconds it ends with: "48h", "1h30m", "90s".
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// NewTask is one task of a new run. Parents name other tasks of the same
// run. An onfailure task has no parents and is not enqueued until the run
// fails; it does not count toward the run's completion.
type NewTask struct {
	Name        string
	Kind        TaskKind
	Parents     []string
	MaxAttempts int // attempts allowed before a rescued task fails for good; 0 means 1
	// Signature says what code may run the task: only a worker that serves
	// it (ClaimParams.Signatures) claims the task. See engine.Definition's
	// Signatures. Empty only in stores' own tests.
	Signature string
	// RateLimit, when set, names the rate limit (see [FlowControl]) each
	// attempt of the task takes RateUnits tokens from (0 means one), from
	// the bucket of RateKey: the task waits QUEUED, outside the fair
	// queue, until the bucket has them. Never started as it is created or
	// continued on a worker.
	RateLimit string
	RateKey   string
	RateUnits int
}

// ClaimParams says what a worker claims.
type ClaimParams struct {
	Worker string // worker id, recorded on the task
	// Signatures are the task signatures the worker serves: it claims only
	// tasks with one of them. Empty means any task (stores' tests only).
	Signatures []string
	Limit      int           // at most this many tasks
	Lease      time.Duration // how long the claim holds without renewal
	// Extra are, by signature, the slots a task of that signature takes
	// beyond its own: the steps the completion that stores its result
	// will start on the worker (a fan-out's children). A claim then takes,
	// in queue order, the tasks whose slots fit in Limit, and always at
	// least one. Where a store cannot weigh them (pgstore's claim once the
	// schema has priorities or rate limits) it claims up to Limit tasks:
	// the worker keeps for their steps only the slots left.
	Extra map[string]int
	// Known are runs whose input the worker holds already. A store may
	// claim their tasks without the input (ClaimedTask.InputOmitted), so
	// a large input crosses the wire once to a worker, not once a step.
	Known []dag.RunID
}

// Filled reports whether a claim with p that took tasks took all it could:
// Limit tasks, or as many slots (Extra) as another task of the most extra
// slots would not have fit with. A claim not filled found no more tasks.
func (p ClaimParams) Filled(tasks []ClaimedTask) bool {
	if len(tasks) >= p.Limit {
		return true
	}
	if len(p.Extra) == 0 || len(tasks) == 0 {
		return false
	}
	most := 0
	for _, n := range p.Extra {
		most = max(most, n)
	}
	return p.Slots(tasks)+1+most > p.Limit
}

// Slots counts the slots claimed tasks take: one each, and their Extra.
func (p ClaimParams) Slots(tasks []ClaimedTask) int {
	n := len(tasks)
	for i := range tasks {
		n += p.Extra[tasks[i].Signature]
	}
	return n
}

// Serves reports whether a claim with p takes tasks of signature sig: one
// of p.Signatures, or any when it is empty.
func (p ClaimParams) Serves(sig string) bool {
	return len(p.Signatures) == 0 || slices.Contains(p.Signatures, sig)
}

// Serving returns Serves as a function that answers without a walk of
// p.Signatures, for a caller that asks of every task of a batch: a worker
// of a workflow of thousands of steps serves thousands of signatures.
func (p ClaimParams) Serving() func(sig string) bool {
	if len(p.Signatures) <= servingScan {
		return p.Serves
	}
	set := make(map[string]struct{}, len(p.Signatures))
	for _, s := range p.Signatures {
		set[s] = struct{}{}
	}
	return func(sig string) bool {
		_, ok := set[sig]
		return ok
	}
}

// servingScan is how many signatures Serving still walks rather than
// hashing: a map costs more to build than a short walk saves.
const servingScan = 16

// ClaimedTask is a RUNNING task and everything its step needs.
type ClaimedTask struct {
	RunID    dag.RunID
	Workflow string
	Tenant   string
	Step     string
	Kind     TaskKind
	Attempt  int // the new attempt, 1 for the first
	// Claim is the claim's fence token: random and never zero, written
	// with the claim and required by every write of the attempt (its
	// TaskResult.Claim, a heartbeat's Held). The attempt number alone
	// does not fence: a database restored to an older history (a lagging
	// standby promoted) hands out attempt numbers, and ids of sequences,
	// that workers have seen already, and a late result of the lost
	// history would pass for the new claim's. A random token does not
	// repeat.
	Claim int64
	// Signature is the task's signature, one of ClaimParams.Signatures.
	Signature string
	Input     []byte
	// InputOmitted says Input was left out: the run is one of
	// ClaimParams.Known.
	InputOmitted bool
	// Parents has one entry per parent, in the order the task lists them.
	// Steps read them by name.
	Parents []ParentResult
	// Failure is set for an onfailure task: what failed the run.
	Failure *dag.Failure
	// Element is the index of a KindElement task's element; Step is then
	// ElementName(the mapped step, Element), and the parent the step maps
	// has that element as its Output.
	Element int
	// TraceParent is the run's NewRun.TraceParent, set on every claim
	// (not omitted with the input: it is small).
	TraceParent string
	// Queued is how long the task waited in the ready queue before this
	// claim, on the store's clock; 0 for a task started without queueing
	// (Starter, Continuer).
	Queued time.Duration
	// TenantQueued says the task's tenant had more tasks queued behind it
	// when it was claimed: a later turn of the fair queue was its already.
	// The engine stores the results of such a tenant as a backlog's, not by
	// the lane it keeps for light tenants. False for a task started without
	// queueing (Starter, Continuer): those start only while their tenant has
	// no task queued ahead of them.
	TenantQueued bool
}

// ParentResult is a finished parent as a child sees it.
type ParentResult struct {
	Step   string
	Status TaskStatus // COMPLETED or SKIPPED
	Output []byte     // nil when skipped or when the step has no output
}

// Outcome is what an attempt came to, or what the store made of it.
type Outcome string

// Outcomes of an attempt. Stale is only ever returned by the store.
const (
	OutcomeCompleted Outcome = "completed" // store Output; resolve children
	OutcomeSkipped   Outcome = "skipped"   // store Reason; resolve children
	OutcomeFailed    Outcome = "failed"    // failed for good; fail the run
	OutcomeRetry     Outcome = "retry"     // wait in BACKOFF until the wake time, then enqueue again
	OutcomeSleep     Outcome = "sleep"     // sleep step: SLEEPING until the wake time, then complete
	OutcomeStale     Outcome = "stale"     // not applied: the attempt is no longer current
	// OutcomeMapped maps a KindMap task: the store creates its elements
	// (TaskResult.Elements, at least one) in the same unit, queues up to
	// TaskResult.Limit of them (all when 0) and the mapped task becomes
	// MAPPING. Each element that resolves queues the next one waiting.
	OutcomeMapped Outcome = "mapped"
)

// TaskResult is the result of one attempt, fenced on (RunID, Step,
// Attempt, Claim).
type TaskResult struct {
	RunID   dag.RunID
	Step    string
	Attempt int
	// Claim is the attempt's ClaimedTask.Claim: a result is applied only
	// to the claim that started its attempt, not to a claim of the same
	// attempt number made after the store's history was rolled back.
	Claim   int64
	Outcome Outcome
	Output  []byte // OutcomeCompleted
	Error   string // OutcomeFailed, OutcomeRetry: the step's error text
	Reason  string // OutcomeSkipped: why
	// Wake time for OutcomeRetry and OutcomeSleep: WakeAt when set,
	// otherwise the store's now plus Delay.
	WakeAt time.Time
	Delay  time.Duration
	// OutcomeMapped: the encoded elements, in order; the name of the parent
	// whose output each element stands for in its claim; how many elements
	// may be in flight (queued, running or backing off) at once, 0 for no
	// bound.
	Elements [][]byte
	Each     string
	Limit    int
	// OutcomeChild: the run to start as the task's child, with Parent set
	// to this attempt (see KindChild).
	Child *NewRun
	// ReturnRun asks for the run back, read as RunReader reads it, in
	// CompletionOutcome.Finished when this result finishes it: someone
	// waits for it. Stores that cannot read it back with the completion
	// leave Finished nil.
	ReturnRun bool
}

// ReturnsRun reports whether a store returns r's run in o, the outcome of
// storing r (CompletionOutcome.Finished): r asks for it (ReturnRun), and
// r finished its run.
func (r *TaskResult) ReturnsRun(o CompletionOutcome) bool {
	return r.ReturnRun && o.Outcome != OutcomeStale && o.RunStatus.Terminal()
}

// WakeTime is when a result that waits (OutcomeRetry, OutcomeSleep,
// OutcomeAwait) wakes: WakeAt when it is set, otherwise now plus Delay.
// It reports false when WakeAt is zero and Delay is not above zero, which
// for OutcomeAwait is a wait without end.
func (r *TaskResult) WakeTime(now time.Time) (time.Time, bool) {
	if !r.WakeAt.IsZero() {
		return r.WakeAt, true
	}
	return now.Add(r.Delay), r.Delay > 0
}

// CompletionOutcome reports what the store did with one TaskResult.
type CompletionOutcome struct {
	Outcome Outcome // the result's outcome, or OutcomeStale if not applied
	// RunStatus is the run's status after the result was applied; a terminal
	// status here means this result finished the run.
	RunStatus RunStatus
	// Enqueued counts the tasks this result made ready (children, or the
	// onfailure task).
	Enqueued int
	// Finished is the run this result finished, with its tasks, as
	// RunReader reads them once the completion is stored: set for a
	// result with ReturnRun on stores that read it back with the
	// completion, nil otherwise.
	Finished *FinishedRun
	// TimerDue says the store set a timer due at once, which a worker
	// should fire soon (Execution.FireTimers): a run the batch ended has
	// a parent task to resolve, or children to cancel (see KindChild).
	TimerDue bool
}

// FinishedRun is a run and its tasks, in creation order, as RunReader
// reads them.
type FinishedRun struct {
	Run   Run
	Tasks []Task
}

// Run is a stored run.
type Run struct {
	ID          dag.RunID
	Workflow    string
	Fingerprint string
	Tenant      string
	Status      RunStatus
	Input       []byte
	Failure     *dag.Failure // set when Status is FAILED
	Key         string       // its idempotency key, if any
	CreatedAt   time.Time
	FinishedAt  time.Time // zero while QUEUED or RUNNING
	// ConcurrencyKey is the run's concurrency key when it is capped
	// (Concurrency above zero).
	ConcurrencyKey string
	// Deadline is when the run times out (NewRun.Timeout), or zero.
	Deadline time.Time
	// Parent is the task attempt that started the run as its child, or
	// nil (its Claim is not read back).
	Parent *ParentLink
}

// Task is a stored task.
type Task struct {
	Name      string
	Kind      TaskKind
	Parents   []string
	Signature string // what code may run it (NewTask.Signature)
	Status    TaskStatus
	Attempt   int // attempts started so far
	// Claim is the token of the claim that started the last attempt
	// (ClaimedTask.Claim), 0 before the first: a worker that lost the
	// answer to a claim (StartRuns) and reads the task back needs it to
	// answer for the attempt.
	Claim    int64
	Output   []byte // COMPLETED only
	Error    string // last error
	Reason   string // SKIPPED only
	WakeAt   time.Time
	Worker   string // worker that claimed the last attempt
	Finished time.Time
	// Elements is how many elements a KindMap task was mapped to (0 before
	// it is); Element is a KindElement task's index.
	Elements int
	Element  int
}

// EventType names a task transition in the event log.
type EventType string

// Event types.
const (
	EventQueued    EventType = "QUEUED"
	EventStarted   EventType = "STARTED"
	EventCompleted EventType = "COMPLETED"
	EventSkipped   EventType = "SKIPPED"
	EventRetrying  EventType = "RETRYING"
	EventSleeping  EventType = "SLEEPING"
	EventWoken     EventType = "WOKEN"
	EventFailed    EventType = "FAILED"
	EventRescued   EventType = "RESCUED"
	EventCancelled EventType = "CANCELLED"
	// EventWaiting says a QUEUED task waits for a worker that serves its
	// signature: no live worker does (see Deploys).
	EventWaiting EventType = "WAITING"
	// EventRetried says an operator reset the task ([Retrier.RetryRun]);
	// its Attempt is the task's attempt count at the retry and its detail
	// names the operator and the mode.
	EventRetried EventType = "RETRIED"
	// EventMapped says a mapped step created its elements; its detail
	// says how many.
	EventMapped EventType = "MAPPED"
)

// Event is one entry of a run's append-only event log.
type Event struct {
	At      time.Time
	Step    string
	Type    EventType
	Attempt int
	Detail  string // error text, skip reason or wake time
}
