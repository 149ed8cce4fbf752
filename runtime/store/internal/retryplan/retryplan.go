// Package retryplan decides what retrying a finished run resets, for
// every store's store.Retrier, so that they agree.
package retryplan

import (
	"fmt"

	"github.com/dagenhq/dagen/runtime/store"
)

// Task is a task of the run as the plan needs it.
type Task struct {
	Name     string
	Kind     store.TaskKind
	Children []string
	Status   store.TaskStatus
}

// Plan is what retrying a run does, with one entry per task, in task order.
type Plan struct {
	Reset          []bool // the task is reset to PENDING (or QUEUED)
	PendingParents []int  // a reset task's unresolved parents
	Enqueue        []bool // a reset task with no unresolved parent
	Pending        int    // the run's pending tasks afterwards
	Result         store.RetryResult
}

// Make plans retrying a run in status status whose tasks are tasks.
func Make(status store.RunStatus, tasks []Task, r store.Retry) (Plan, error) {
	if !r.Mode.Valid() {
		return Plan{}, fmt.Errorf("retry mode %q: %w", r.Mode, store.ErrNotRetryable)
	}
	switch status {
	case store.RunFailed, store.RunCancelled:
	case store.RunCompleted:
		if r.Mode != store.RetryFrom && r.Mode != store.RetryAll {
			return Plan{}, fmt.Errorf("run is COMPLETED: nothing failed to retry (replay it with from=STEP or all): %w", store.ErrNotRetryable)
		}
	default:
		return Plan{}, fmt.Errorf("run is %s: only a finished run can be retried (cancel it first or wait): %w", status, store.ErrNotRetryable)
	}
	idx := make(map[string]int, len(tasks))
	for i, t := range tasks {
		idx[t.Name] = i
	}
	n := len(tasks)
	p := Plan{Reset: make([]bool, n), PendingParents: make([]int, n), Enqueue: make([]bool, n)}
	var downstream func(i int)
	downstream = func(i int) {
		for _, c := range tasks[i].Children {
			if j, ok := idx[c]; ok && !p.Reset[j] {
				p.Reset[j] = true
				downstream(j)
			}
		}
	}
	switch r.Mode {
	case store.RetryFailed, store.RetryFailedDownstream:
		for i, t := range tasks {
			if t.Kind != store.KindOnFailure && (t.Status == store.TaskFailed || t.Status == store.TaskCancelled) {
				p.Reset[i] = true
			}
		}
		if r.Mode == store.RetryFailedDownstream {
			for i := range tasks {
				if p.Reset[i] {
					downstream(i)
				}
			}
		}
	case store.RetryFrom:
		i, ok := idx[r.From]
		if !ok || tasks[i].Kind == store.KindOnFailure {
			return Plan{}, fmt.Errorf("retry from %q: the run has no such step: %w", r.From, store.ErrUnknownStep)
		}
		p.Reset[i] = true
		downstream(i)
	case store.RetryAll:
		for i, t := range tasks {
			p.Reset[i] = t.Kind != store.KindOnFailure
		}
	}
	some := false
	for _, reset := range p.Reset {
		some = some || reset
	}
	if !some {
		return Plan{}, fmt.Errorf("run has no task to retry in mode %s: %w", r, store.ErrNotRetryable)
	}
	// A task left FAILED or CANCELLED would keep the run from ever
	// completing.
	for i, t := range tasks {
		if !p.Reset[i] && t.Kind != store.KindOnFailure && (t.Status == store.TaskFailed || t.Status == store.TaskCancelled) {
			return Plan{}, fmt.Errorf("step %q is %s and %s does not reset it (retry failed, failed+downstream or from a step upstream of it): %w",
				t.Name, t.Status, r, store.ErrNotRetryable)
		}
	}
	// Parents' statuses afterwards: a reset parent is unresolved.
	for i, t := range tasks {
		if t.Kind == store.KindOnFailure {
			continue
		}
		resolved := !p.Reset[i] && t.Status.Resolved()
		if !resolved {
			p.Pending++
		}
		for _, c := range t.Children {
			if j, ok := idx[c]; ok && !resolved {
				p.PendingParents[j]++
			}
		}
	}
	for i, t := range tasks {
		if t.Kind == store.KindOnFailure && t.Status != store.TaskPending {
			p.Reset[i] = true // so that it runs again if the run fails again
			continue
		}
		if p.Reset[i] && t.Kind != store.KindOnFailure {
			p.Enqueue[i] = p.PendingParents[i] == 0
		}
	}
	for i, t := range tasks {
		if p.Reset[i] {
			p.Result.Reset = append(p.Result.Reset, t.Name)
		}
		if p.Enqueue[i] {
			p.Result.Enqueued = append(p.Result.Enqueued, t.Name)
		}
	}
	return p, nil
}
