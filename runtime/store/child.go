package store

import (
	"slices"
	"strconv"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Child runs (//dag:child). A KindChild task is queued and claimed like a
// step once its parents are resolved; its func builds the input of a run
// of another workflow, and the engine hands the task back with
// OutcomeChild and that run (TaskResult.Child). The store creates the
// child run in the same unit, linked to the task's attempt
// (NewRun.Parent), and the task is AWAITING, holding no lease and no
// worker, until the child run ends. Then, in a unit of its own (a timer
// of kind child on the task, due at once, so that no unit locks a child
// run and then its parent's), the task completes with the output of the
// child's result task (NewRun.Parent's Result), is SKIPPED when that task
// was, or fails for good when the child run failed or was cancelled.
//
// A run that fails, times out or is cancelled cancels its children that
// are still under way, each in a unit of its own (a timer of kind cancel
// on the child run, due at once). An element of a mapped step may be a
// child task too: the store cannot tell, and need not.
const (
	// KindChild is a child step: its output is its child run's result.
	KindChild TaskKind = "child"
	// OutcomeChild makes a KindChild task (or an element of a mapped
	// child step) start TaskResult.Child and wait, AWAITING, until that
	// run ends. When the child's idempotency key is taken (the attempt's
	// child was created before), no run is created and the task waits for
	// the run that has it.
	OutcomeChild Outcome = "child"
)

// ParentLink ties a child run to the task attempt that started it.
type ParentLink struct {
	Run     dag.RunID // the parent run
	Task    string    // the parent's task: a step, or an element "Step[3]"
	Attempt int       // the attempt of that task that started the child
	Claim   int64     // that attempt's claim token
	// Result is the stored name of the child's task whose output becomes
	// the parent task's output, or empty when the parent task has no
	// output: the child run completing completes it.
	Result string
}

// ChildKey is the idempotency key of the child run that attempt attempt of
// task task of run parent starts: one child per parent task attempt.
func ChildKey(parent dag.RunID, task string, attempt int) string {
	return "child:" + parent.String() + ":" + task + ":" + strconv.Itoa(attempt)
}

// ChildRun is a run a task of another run started (Operator.ListChildren).
type ChildRun struct {
	ID       dag.RunID
	Workflow string
	Status   RunStatus
	// Task and Attempt are the parent's task and the attempt of it that
	// started the run.
	Task       string
	Attempt    int
	CreatedAt  time.Time
	FinishedAt time.Time // zero while QUEUED or RUNNING
}

// ChildFilter selects runs by whether a task of another run started them
// (RunFilter.Children).
type ChildFilter string

// Child filters.
const (
	AllRuns    ChildFilter = ""     // child runs and the others
	OnlyChild  ChildFilter = "only" // runs a parent task started
	NoChildren ChildFilter = "none" // runs started by a trigger or a schedule
)

// ChildRunFailed is the message a task fails with when its child run
// failed: the child's id, its workflow and its own failure.
func ChildRunFailed(id dag.RunID, workflow string, f *dag.Failure) string {
	msg := "child run " + id.String() + " of " + workflow + " failed"
	if f != nil {
		if f.Step != "" {
			msg += " at step " + f.Step
		}
		if f.Message != "" {
			msg += ": " + f.Message
		}
	}
	return msg
}

// ChildRunCancelled is the message a task fails with when its child run
// was cancelled.
func ChildRunCancelled(id dag.RunID, workflow string) string {
	return "child run " + id.String() + " of " + workflow + " was cancelled"
}

// ChildResultSkipped is the reason a task is SKIPPED with when its child
// run completed with its result task skipped.
func ChildResultSkipped(id dag.RunID, result string) string {
	return "child run " + id.String() + " skipped its result step " + result
}

// GroupChildren groups a run's child runs (Operator.ListChildren) by the
// task that started them, each task's latest attempt first: that is the
// child the task waits for or took its output from; the earlier ones are
// history. The operator views share it.
func GroupChildren(kids []ChildRun) map[string][]ChildRun {
	out := map[string][]ChildRun{}
	for _, k := range kids {
		out[k.Task] = append(out[k.Task], k)
	}
	for _, ks := range out {
		slices.SortStableFunc(ks, func(a, b ChildRun) int { return b.Attempt - a.Attempt })
	}
	return out
}

// CurrentChild returns the child run that t's current attempt started,
// if it started one: what an AWAITING child task waits for. byTask is
// GroupChildren's.
func CurrentChild(t Task, byTask map[string][]ChildRun) (ChildRun, bool) {
	for _, k := range byTask[t.Name] {
		if k.Attempt == t.Attempt {
			return k, true
		}
	}
	return ChildRun{}, false
}
