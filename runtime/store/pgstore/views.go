package pgstore

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
)

// A claimView is what a claim returned of a task's row (migration 013):
// enough to decide a completed result of the attempt it started without
// reading the row again. The store keeps it with the attempt's lease
// (leaseBook.attempts) until the attempt is answered.
//
// It is only a proposal. UpdateTasks writes a task decided on a view only
// where the row is still RUNNING at startedEvent, and fails the whole
// transaction otherwise (dagen_claim_moved): the completion then decides
// again on the rows it reads (see completeTasks).
type claimView struct {
	kind         store.TaskKind
	signature    string
	children     []string
	startedEvent int64      // the attempt's STARTED event id: unique to the claim
	ctid         pgtype.TID // where the claim left the row
}

// viewOf is the claim view of task t, made of what its claim returned of
// the row: its children, its STARTED event id and where it is.
func viewOf(t *store.ClaimedTask, children []string, startedEvent int64, ctid pgtype.TID) claimView {
	return claimView{kind: t.Kind, signature: t.Signature, children: children, startedEvent: startedEvent, ctid: ctid}
}

// viewFor returns the view a completion may decide res on: one kept for
// its attempt, of a step (not a mapped task, an element, a signal wait or
// an onfailure task, whose rows others may write while they run), when res
// completes it. Other outcomes are rare; they read the row.
func (l *leaseBook) viewFor(res *store.TaskResult) (claimView, bool) {
	if res.Outcome != store.OutcomeCompleted {
		return claimView{}, false
	}
	v := l.attempts[attemptKey{res.RunID, res.Step, res.Attempt}].view
	if v.kind != store.KindStep { // none kept (zero), or not a step's
		return claimView{}, false
	}
	return v, true
}

// viewsFor returns, by result, the views a completion may decide the
// results on (see viewFor), zero for a result with none (see decides), or
// nil when there are none at all.
func (l *leaseBook) viewsFor(results []store.TaskResult) []claimView {
	l.mu.Lock()
	defer l.mu.Unlock()
	var views []claimView
	for i := range results {
		v, ok := l.viewFor(&results[i])
		if !ok {
			continue
		}
		if views == nil {
			views = make([]claimView, len(results))
		}
		views[i] = v
	}
	return views
}

// decides reports whether views, from viewsFor, holds a view for result i.
func decides(views []claimView, i int) bool {
	return views != nil && views[i].kind == store.KindStep
}

// fromView adds the task of a result decided on its claim view, as
// readTasks would have read it had the row not moved on since the claim
// (UpdateTasks checks that it did not), when its run is locked.
func (b *batch) fromView(res *store.TaskResult, v *claimView) {
	k := taskKey{res.RunID, res.Step}
	r := b.runs[k.run]
	if r == nil || b.tasks[k] != nil {
		return
	}
	b.add(&taskState{
		Task: transition.Task{Kind: v.kind, Status: store.TaskRunning, Attempt: res.Attempt},
		key:  k, run: r, signature: v.signature, children: v.children,
		startedEvent: v.startedEvent, lease: v.startedEvent, ctid: v.ctid,
		expectStarted: v.startedEvent,
	})
}

// claimMoved reports whether err is dagen_claim_moved's.
func claimMoved(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "DGN01"
}

// toRead returns the keys of the results not decided on views, with the
// mapped tasks of elements (withMappedTasks): the tasks a completion reads.
func toRead(results []store.TaskResult, views []claimView) []taskKey {
	keys := make([]taskKey, 0, len(results))
	for i := range results {
		if !decides(views, i) {
			keys = append(keys, taskKey{results[i].RunID, results[i].Step})
		}
	}
	return withMappedTasks(keys)
}
