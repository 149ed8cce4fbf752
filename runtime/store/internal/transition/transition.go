package transition

import (
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// Run is the state of a run that a batch decides on. A store loads it (or
// holds it) and writes back what the batch changed.
type Run struct {
	ID      dag.RunID
	Status  store.RunStatus
	Pending int // unfinished tasks that count toward completion
	Failure *dag.Failure
	Timeout time.Duration // the run's timeout, for the message of TimeOut

	// What the batch did to it.
	Dirty  bool // status, pending or failure changed: write the run
	End    End  // how it ended in this batch, if it did
	EndSrc int  // the source credited with its onfailure task, or -1
}

// Schedules reports whether the run still schedules work for a task of
// kind k: a run that ended schedules nothing new but its onfailure task.
func (r *Run) Schedules(k store.TaskKind) bool {
	return r.Status == store.RunRunning || k == store.KindOnFailure
}

// End says how a run ended in a batch, and so which of its tasks the store
// cancels (see [End.Cancels]).
type End uint8

// The ways a run ends in a batch.
const (
	EndNone      End = iota
	EndCompleted     // its last task resolved
	EndFailed        // a task failed for good
	EndTimedOut      // its deadline passed
	EndCancelled     // an operator cancelled it
)

// Statuses a run's end cancels (see End.Cancels), for stores that cancel
// with a query.
var (
	// WaitingStatuses are the statuses of tasks that wait for something:
	// a failed run cancels them, and lets RUNNING attempts finish.
	WaitingStatuses = []store.TaskStatus{store.TaskPending, store.TaskQueued, store.TaskSleeping, store.TaskBackoff, store.TaskMapping, store.TaskAwaiting}
	// UnfinishedStatuses are WaitingStatuses and RUNNING: a run that timed
	// out or was cancelled cancels them all.
	UnfinishedStatuses = append(append([]store.TaskStatus(nil), WaitingStatuses...), store.TaskRunning)
)

// Cancels reports whether ending a run this way cancels a task of it in
// status st and of kind k. A failed run cancels its waiting tasks, so that
// running attempts may finish, and spares its onfailure task, which it
// queues; a run that timed out also stops its running attempts; a
// cancelled run cancels every unfinished task.
func (e End) Cancels(st store.TaskStatus, k store.TaskKind) bool {
	switch e {
	case EndFailed:
		return k != store.KindOnFailure && !st.Terminal() && st != store.TaskRunning
	case EndTimedOut:
		return k != store.KindOnFailure && !st.Terminal()
	case EndCancelled:
		return !st.Terminal()
	}
	return false
}

// Statuses returns the statuses End.Cancels cancels (the onfailure task
// aside), for a store that cancels with a query.
func (e End) Statuses() []store.TaskStatus {
	switch e {
	case EndFailed:
		return WaitingStatuses
	case EndTimedOut, EndCancelled:
		return UnfinishedStatuses
	}
	return nil
}

// QueuesOnFailure reports whether ending a run this way queues its
// onfailure task.
func (e End) QueuesOnFailure() bool { return e == EndFailed || e == EndTimedOut }

// Timer kinds: what a task's wake time does when it fires.
const (
	TimerSleep  = "sleep"  // a sleep completes
	TimerRetry  = "retry"  // a retry delay ends: the task is queued again
	TimerSignal = "signal" // a signal wait ends unsignalled: the task is skipped
	// TimerChild is set on a child task when its child run ends: fired,
	// the task is resolved with the child's outcome (Batch.ChildEnded).
	TimerChild = "child"
	// TimerCancel is set on a child run (task CancelTimerTask) when its
	// parent run failed, timed out or was cancelled: fired, it cancels
	// the run (Batch.CancelRun).
	TimerCancel = "cancel"
)

// CancelTimerTask is the task name of a run's TimerCancel timer.
const CancelTimerTask = "@cancel"

// Task is the state of a task that a batch decides on.
type Task struct {
	Run     *Run
	Name    string
	Kind    store.TaskKind
	Status  store.TaskStatus
	Attempt int
	// Claim is the fence token of the claim that started the attempt
	// (store.ClaimedTask.Claim), 0 before the first claim.
	Claim       int64
	MaxAttempts int // attempts it may take before a lost lease fails it
	Err         string
	Reason      string
	WakeAt      time.Time
	Output      []byte
	Held        bool // a signal wait holds a signal sent before it waited

	// A mapped task's state: how many elements it has, how many are
	// unresolved, the next to queue and how many may be in flight.
	Elements, MapPending, NextElement, MapLimit int

	// Ref is the store's own handle for the task (an index, say): the
	// core never reads it.
	Ref int

	// What the batch did to it.
	Dirty bool // changed: write it
	// Finished: it reached a terminal status in this batch.
	Finished bool
	// OwnOutput: Output is what the batch completed it with (nil keeps
	// the stored output).
	OwnOutput bool
	// Completed: it completed with its own result (an attempt's output,
	// a held signal, its elements' outputs): its COMPLETED event is among
	// the batch's first (see Batch.Log).
	Completed bool
	// Timer is the kind of timer to write at WakeAt, or "".
	Timer string
	// Consume: the held signal becomes its output.
	Consume bool
	// Requeued: it goes back to the ready queue for another attempt; the
	// events of the attempt that ended are settled.
	Requeued bool
	MapDirty bool // its mapped state changed
}

// Waiting reports whether t waits for its wake time: sleeping, backing
// off before a retry, or awaiting a signal.
func (t *Task) Waiting() bool {
	return t.Status == store.TaskSleeping || t.Status == store.TaskBackoff || t.Status == store.TaskAwaiting
}

// WritesTimer reports whether the batch set t a timer the store must
// write: one of Timer's kind at WakeAt, unless t stopped waiting later in
// the batch.
func (t *Task) WritesTimer() bool { return t.Timer != "" && t.Waiting() }

// Event is an event a batch logs: Task is nil for the run's own (a
// deadline's FAILED).
type Event struct {
	Run     *Run
	Task    *Task
	Step    string
	Type    store.EventType
	Attempt int
	Detail  string
}

// Source is a task the batch changed, with the index of the source (a
// result, a timer, a lease) credited with what it makes ready.
type Source struct {
	Task *Task
	Src  int
}

// NewElements are the elements a task mapped in the batch: the store
// creates them, the first Admitted QUEUED.
type NewElements struct {
	Task     *Task
	Items    [][]byte
	Each     string
	Admitted int
	// Again: the task was mapped before (a retry reset it), so its
	// elements may exist already.
	Again bool
	Src   int
}

// ElementWindow bounds the elements of a mapped task without a limit that
// are in flight at once: the others wait PENDING and are queued as
// elements resolve. It keeps the unit that maps 100,000 elements from also
// queueing them all (a long fair-queue insert during which no element could
// run; see docs/performance.md, "The element window of a mapped step"), and
// it is far more than workers run at once.
const ElementWindow = 10_000

// QueuedElement is an element a resolved element's slot admits.
type QueuedElement struct {
	Run  *Run
	Name string
	Src  int
}

// Batch decides the transitions of one unit of work over tasks of locked
// runs: attempt results, fired timers, rescued leases, deadlines, signals
// and cancellations. Its methods change the tasks and runs they are given
// and record what the store must then do, in order. A Batch does no I/O
// and reads no clock: Now is the unit's time.
type Batch struct {
	Now time.Time
	// Find returns the task of run named name that the store loaded for
	// the batch, or nil: the mapped task of a resolved element.
	Find func(run *Run, name string) *Task

	// Changed are the tasks to write, in the order they first changed.
	Changed []*Task
	// Events are the events the batch's decisions log, in decision order
	// (see Log for where they stand among the others).
	Events []Event
	// Resolved are the tasks COMPLETED or SKIPPED in a RUNNING run, in
	// order: the store counts their children down and queues the children
	// that reach zero (the countdown is the store's, so that fan-in
	// happens exactly once).
	Resolved []Source
	// Requeued are the tasks to put back in the ready queue, in order.
	Requeued []Source
	// Mapped are the tasks mapped in the batch, whose elements the store
	// creates; Admitted are elements admitted in resolved ones' place;
	// MapChanged the mapped tasks whose mapped state changed; Collect the
	// mapped tasks whose last element resolved, which the store completes
	// with their elements' outputs (Batch.Collect).
	Mapped     []NewElements
	Admitted   []QueuedElement
	MapChanged []*Task
	Collect    []Source
	// Ended are the runs that ended in the batch, in order.
	Ended []*Run
	// Children are the child runs the batch's results start (OutcomeChild),
	// in order: the store creates them in the same unit.
	Children []NewChild
}

// NewChild is a child run a task started: the store creates Run (with
// its Parent set) in the batch's unit, and the task waits for it.
type NewChild struct {
	Task *Task
	Run  *store.NewRun
	Src  int
}

// New returns a batch at time now that finds mapped tasks with find.
func New(now time.Time, find func(run *Run, name string) *Task) *Batch {
	return &Batch{Now: now, Find: find}
}

func (b *Batch) touch(t *Task) {
	if !t.Dirty {
		t.Dirty = true
		b.Changed = append(b.Changed, t)
	}
}

func (b *Batch) event(t *Task, typ store.EventType, detail string) {
	b.Events = append(b.Events, Event{Run: t.Run, Task: t, Step: t.Name, Type: typ, Attempt: t.Attempt, Detail: detail})
}

// Log returns the events of the batch's decisions in the order every
// store logs them, for each run: first the COMPLETED events of tasks that
// completed with their own result, in the order they changed; then the
// other events of the decisions, in decision order. After them a store
// logs, in this order, the CANCELLED events of the tasks the runs' ends
// cancel (in the run's task order), the QUEUED events of requeued tasks
// and onfailure tasks, those of elements, and last those of children made
// ready.
func (b *Batch) Log() []Event {
	log := make([]Event, 0, len(b.Events)+len(b.Changed))
	for _, t := range b.Changed {
		if t.Completed {
			log = append(log, Event{Run: t.Run, Task: t, Step: t.Name, Type: store.EventCompleted, Attempt: t.Attempt})
		}
	}
	return append(log, b.Events...)
}

// Apply applies the result of an attempt, fenced on the task being RUNNING
// at that attempt under that claim; t is the result's task, or nil when
// the store has none of that name; src is the result's index.
//
// The claim token is the fence, the attempt number only a check: a store
// whose history was rolled back (a lagging standby promoted) may claim the
// task again at the attempt number a worker of the lost history holds,
// whose late result, computed from what that history stored, must not pass
// for the new claim's. A token drawn at random does not repeat.
func (b *Batch) Apply(src int, r *Run, t *Task, res *store.TaskResult) store.CompletionOutcome {
	stale := store.CompletionOutcome{Outcome: store.OutcomeStale}
	if r != nil {
		stale.RunStatus = r.Status
	}
	if !Holds(t, res.Attempt, res.Claim) {
		return stale
	}
	r = t.Run
	out := store.CompletionOutcome{Outcome: res.Outcome}
	switch res.Outcome {
	case store.OutcomeCompleted:
		t.Output = res.Output
		t.OwnOutput = res.Output != nil
		t.Completed = true
		b.Resolve(t, store.TaskCompleted, src)
	case store.OutcomeSkipped:
		t.Reason = res.Reason
		b.event(t, store.EventSkipped, res.Reason)
		b.Resolve(t, store.TaskSkipped, src)
	case store.OutcomeFailed:
		b.Fail(t, res.Error, src)
	case store.OutcomeMapped:
		if t.Kind != store.KindMap || len(res.Elements) == 0 {
			return stale
		}
		if r.Status != store.RunRunning {
			b.Cancel(t)
			out.Outcome = store.OutcomeStale
			break
		}
		b.mapTask(t, res, src)
	case store.OutcomeAwait:
		if t.Kind != store.KindSignal {
			return stale
		}
		if r.Status != store.RunRunning {
			b.Cancel(t)
			out.Outcome = store.OutcomeStale
			break
		}
		b.await(t, res, src)
	case store.OutcomeChild:
		if res.Child == nil || t.Kind != store.KindChild && t.Kind != store.KindElement {
			return stale
		}
		if r.Status != store.RunRunning {
			b.Cancel(t)
			out.Outcome = store.OutcomeStale
			break
		}
		b.awaitChild(t, res.Child, src)
	case store.OutcomeRetry, store.OutcomeSleep:
		if !r.Schedules(t.Kind) {
			b.Cancel(t)
			out.Outcome = store.OutcomeStale
			break
		}
		t.Err = res.Error
		wake, _ := res.WakeTime(b.Now)
		t.WakeAt = wake.Truncate(time.Microsecond) // what Postgres keeps
		if res.Outcome == store.OutcomeRetry {
			t.Status, t.Timer = store.TaskBackoff, TimerRetry
			b.event(t, store.EventRetrying, res.Error)
		} else {
			t.Status, t.Timer = store.TaskSleeping, TimerSleep
			b.event(t, store.EventSleeping, t.WakeAt.UTC().Format(time.RFC3339Nano))
		}
		b.touch(t)
	default:
		return stale
	}
	out.RunStatus = r.Status
	return out
}

// Holds reports whether t is RUNNING at the attempt that the claim whose
// token is claim started: whether a write of that attempt (a result, a
// heartbeat's renewal, a release) is still its to make.
func Holds(t *Task, attempt int, claim int64) bool {
	return t != nil && t.Status == store.TaskRunning && t.Attempt == attempt && t.Claim == claim
}

// Resolve finishes a task as COMPLETED or SKIPPED: an element counts down
// on its mapped task, any other task on its run, which completes with its
// last task.
func (b *Batch) Resolve(t *Task, status store.TaskStatus, src int) {
	t.Status = status
	t.Finished = true
	b.touch(t)
	switch t.Kind {
	case store.KindOnFailure:
		return
	case store.KindElement:
		b.elementResolved(t, src)
		return
	}
	r := t.Run
	r.Pending--
	r.Dirty = true
	if r.Status != store.RunRunning {
		return
	}
	b.Resolved = append(b.Resolved, Source{t, src})
	if r.Pending == 0 {
		r.Status = store.RunCompleted
		b.end(r, EndCompleted, src)
	}
}

// Fail fails a task for good, and its run if it is RUNNING: the store then
// cancels the run's waiting tasks and queues its onfailure task.
func (b *Batch) Fail(t *Task, msg string, src int) {
	t.Status = store.TaskFailed
	t.Err = msg
	t.Finished = true
	b.touch(t)
	b.event(t, store.EventFailed, msg)
	if t.Kind == store.KindOnFailure {
		return
	}
	r := t.Run
	if t.Kind != store.KindElement { // elements count toward their mapped task, not the run
		r.Pending--
	}
	r.Dirty = true
	if r.Status == store.RunRunning {
		r.Status = store.RunFailed
		r.Failure = &dag.Failure{RunID: r.ID, Step: t.Name, Attempt: t.Attempt, Message: msg}
		b.end(r, EndFailed, src)
	}
}

// Cancel cancels a task.
func (b *Batch) Cancel(t *Task) {
	t.Status = store.TaskCancelled
	t.Finished = true
	b.touch(t)
	b.event(t, store.EventCancelled, "")
}

// Requeue puts a task back in the ready queue for another attempt (a fired
// retry, a rescue, a release).
func (b *Batch) Requeue(t *Task, src int) {
	t.Status = store.TaskQueued
	t.Requeued = true
	b.touch(t)
	b.Requeued = append(b.Requeued, Source{t, src})
}

// Rescue takes a RUNNING task back from a worker that lost its lease:
// queued again for another attempt, or failed when it has none left; in a
// run that ended, cancelled.
func (b *Batch) Rescue(t *Task, src int) {
	switch {
	case t.Attempt >= max(t.MaxAttempts, 1):
		b.Apply(src, t.Run, t, &store.TaskResult{
			RunID: t.Run.ID, Step: t.Name, Attempt: t.Attempt, Claim: t.Claim,
			Outcome: store.OutcomeFailed, Error: "lease expired",
		})
	case !t.Run.Schedules(t.Kind):
		b.Cancel(t)
	default:
		b.event(t, store.EventRescued, "lease expired")
		b.Requeue(t, src)
	}
}

// Release hands a RUNNING task back from a stopping worker (or one that
// never received it) with a RESCUED event of that detail: queued again,
// whatever attempts it has left; in a run that ended, cancelled. It
// reports whether it queued the task.
func (b *Batch) Release(t *Task, detail string, src int) bool {
	if !t.Run.Schedules(t.Kind) {
		b.Cancel(t)
		return false
	}
	b.event(t, store.EventRescued, detail)
	b.Requeue(t, src)
	return true
}

// Fire fires a timer of kind kind that attempt attempt of t, under the
// claim whose token is claim, set: a sleep completes, a signal wait that
// ended unsignalled is skipped, a retry delay that ended queues the task
// again. It reports whether the timer was live (a stale timer does
// nothing): a wake belongs to the attempt that set it, and the attempt to
// its claim, as for Apply.
func (b *Batch) Fire(t *Task, kind string, attempt int, claim int64, src int) bool {
	if t == nil || t.Attempt != attempt || t.Claim != claim {
		return false
	}
	switch {
	case kind == TimerSleep && t.Status == store.TaskSleeping:
		b.event(t, store.EventWoken, "")
		b.event(t, store.EventCompleted, "")
		b.Resolve(t, store.TaskCompleted, src)
	case kind == TimerSignal && t.Status == store.TaskAwaiting:
		b.event(t, store.EventSkipped, t.Reason)
		b.Resolve(t, store.TaskSkipped, src)
	case kind == TimerRetry && t.Status == store.TaskBackoff:
		if !t.Run.Schedules(t.Kind) {
			b.Cancel(t)
		} else {
			b.Requeue(t, src)
		}
	default:
		return false
	}
	return true
}

// TimeOut fails a QUEUED or RUNNING run at its deadline: the store
// cancels its unfinished tasks, RUNNING ones too (their workers hear of it
// as of a cancellation), and queues its onfailure task. It reports whether
// the run was still under way.
func (b *Batch) TimeOut(r *Run, src int) bool {
	if r.Status.Terminal() {
		return false
	}
	msg := store.TimedOut(r.Timeout)
	r.Status = store.RunFailed
	r.Dirty = true
	r.Failure = &dag.Failure{RunID: r.ID, Step: store.DeadlineStep, Message: msg}
	b.Events = append(b.Events, Event{Run: r, Step: store.DeadlineStep, Type: store.EventFailed, Detail: msg})
	b.end(r, EndTimedOut, src)
	return true
}

// CancelRun cancels a QUEUED or RUNNING run: the store cancels its
// unfinished tasks. It reports whether the run was still under way.
func (b *Batch) CancelRun(r *Run) bool {
	if r.Status.Terminal() {
		return false
	}
	r.Status = store.RunCancelled
	r.Dirty = true
	b.end(r, EndCancelled, -1)
	return true
}

func (b *Batch) end(r *Run, e End, src int) {
	r.End, r.EndSrc = e, src
	b.Ended = append(b.Ended, r)
}

// Signal sends a signal to a signal wait: an AWAITING wait completes with
// the payload as its output; any other holds it until it waits. The
// caller has checked that the signal may be sent (store.Signaler's
// errors). It reports whether the signal was delivered.
func (b *Batch) Signal(t *Task, payload []byte) bool {
	if t.Status != store.TaskAwaiting {
		t.Held = true // the store holds the payload
		b.event(t, store.EventSignalled, store.SignalHeld)
		return false
	}
	t.Output, t.OwnOutput, t.Reason, t.WakeAt, t.Timer = payload, true, "", time.Time{}, ""
	b.event(t, store.EventSignalled, store.SignalDelivered)
	b.event(t, store.EventCompleted, "")
	b.Resolve(t, store.TaskCompleted, 0)
	return true
}

// await applies an OutcomeAwait to a RUNNING signal wait: a held signal
// completes it at once (it becomes its output); otherwise it waits, with a
// timer when its wait ends.
func (b *Batch) await(t *Task, res *store.TaskResult, src int) {
	if t.Held {
		t.Consume = true
		t.Completed = true
		b.Resolve(t, store.TaskCompleted, src)
		return
	}
	t.Status = store.TaskAwaiting
	t.Reason = res.Reason
	t.WakeAt = time.Time{}
	detail := ""
	if wake, ends := res.WakeTime(b.Now); ends {
		t.WakeAt = wake.Truncate(time.Microsecond)
		t.Timer = TimerSignal
		detail = t.WakeAt.UTC().Format(time.RFC3339Nano)
	}
	b.event(t, store.EventAwaiting, detail)
	b.touch(t)
}

// mapTask maps a RUNNING mapped task: it becomes MAPPING, and the store
// creates its elements and queues as many as its limit allows.
func (b *Batch) mapTask(t *Task, res *store.TaskResult, src int) {
	n := len(res.Elements)
	limit := ElementWindow
	if res.Limit > 0 {
		limit = res.Limit
	}
	admitted := store.AdmitElements(0, n, n, limit)
	again := t.Elements > 0
	t.Status = store.TaskMapping
	t.Elements, t.MapPending, t.NextElement, t.MapLimit = n, n, admitted, limit
	b.touch(t)
	b.mapDirty(t)
	b.event(t, store.EventMapped, store.MappedDetail(n, res.Limit))
	b.Mapped = append(b.Mapped, NewElements{Task: t, Items: res.Elements, Each: res.Each, Admitted: admitted, Again: again, Src: src})
}

func (b *Batch) mapDirty(t *Task) {
	if !t.MapDirty {
		t.MapDirty = true
		b.MapChanged = append(b.MapChanged, t)
	}
}

// elementResolved counts a resolved element of a RUNNING run down on its
// mapped task: the next element waiting for a slot is admitted, and the
// last one has the mapped task collected.
func (b *Batch) elementResolved(t *Task, src int) {
	if t.Run.Status != store.RunRunning {
		return
	}
	step, _, ok := store.ParseElement(t.Name)
	if !ok {
		return
	}
	m := b.Find(t.Run, step)
	if m == nil || m.Status != store.TaskMapping {
		return
	}
	m.MapPending--
	b.mapDirty(m)
	for range store.AdmitElements(m.NextElement, m.Elements, m.MapPending, m.MapLimit) {
		b.Admitted = append(b.Admitted, QueuedElement{Run: t.Run, Name: store.ElementName(step, m.NextElement), Src: src})
		m.NextElement++
	}
	if m.MapPending == 0 {
		b.Collect = append(b.Collect, Source{m, src})
	}
}

// Complete completes a mapped task whose last element resolved (an entry
// of Collect) with its elements' outputs, in element order.
func (b *Batch) Complete(c Source, outputs [][]byte) {
	m := c.Task
	if m.Run.Status != store.RunRunning {
		return
	}
	m.Output = store.CollectOutputs(outputs)
	m.OwnOutput = m.Output != nil
	m.Completed = true
	b.Resolve(m, store.TaskCompleted, c.Src)
}

// awaitChild applies an OutcomeChild to a RUNNING child task: it waits,
// AWAITING and without a timer, and the store creates the child run.
func (b *Batch) awaitChild(t *Task, child *store.NewRun, src int) {
	t.Status = store.TaskAwaiting
	t.Reason, t.WakeAt = "", time.Time{}
	b.event(t, store.EventAwaiting, "child run "+child.ID.String()+" of "+child.Workflow)
	b.touch(t)
	b.Children = append(b.Children, NewChild{Task: t, Run: child, Src: src})
}

// ChildOutcome is how a child run ended, as the store read it when its
// TimerChild fired.
type ChildOutcome struct {
	ID       dag.RunID
	Workflow string
	Status   store.RunStatus
	Failure  *dag.Failure
	// Result is the child's result task (store.ParentLink.Result), or
	// empty; ResultStatus and Output are that task's.
	Result       string
	ResultStatus store.TaskStatus
	Output       []byte
}

// ChildEnded resolves a child task whose child run ended, fenced on the
// task AWAITING at the attempt that started the child under that claim
// (the timer's): a completed child completes it with its result task's
// output, or skips it when that task was skipped; a failed or cancelled
// child fails it for good, and so its run. It reports whether the task
// was waiting for that child.
func (b *Batch) ChildEnded(t *Task, attempt int, claim int64, c ChildOutcome, src int) bool {
	if t == nil || t.Status != store.TaskAwaiting || t.Attempt != attempt || t.Claim != claim ||
		t.Kind != store.KindChild && t.Kind != store.KindElement {
		return false
	}
	switch c.Status {
	case store.RunCompleted:
		if c.Result != "" && c.ResultStatus == store.TaskSkipped {
			t.Reason = store.ChildResultSkipped(c.ID, c.Result)
			b.event(t, store.EventSkipped, t.Reason)
			b.Resolve(t, store.TaskSkipped, src)
			return true
		}
		t.Output = nil
		if c.Result != "" {
			t.Output = c.Output
		}
		t.OwnOutput = t.Output != nil
		b.event(t, store.EventCompleted, "")
		b.Resolve(t, store.TaskCompleted, src)
	case store.RunFailed:
		b.Fail(t, store.ChildRunFailed(c.ID, c.Workflow, c.Failure), src)
	case store.RunCancelled:
		b.Fail(t, store.ChildRunCancelled(c.ID, c.Workflow), src)
	default:
		return false
	}
	return true
}
