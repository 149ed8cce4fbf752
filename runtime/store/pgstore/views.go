package pgstore

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/leasebook"
)

// A completion decides a completed result of an attempt this store
// claimed on the claim's view of the task's row (leasebook.View, kept by
// the store's lease book until the attempt is answered) rather than on the
// row read again. The functions here are the batch's side of that: the
// book owns the views, the batch reads them.

// fromView adds the task of a result decided on its claim view, as
// readTasks would have read it had the row not moved on since the claim
// (UpdateTasks checks that it did not), when its run is locked.
func (b *batch) fromView(res *store.TaskResult, v *leasebook.View) {
	k := taskKey{res.RunID, res.Step}
	r := b.runs[k.run]
	if r == nil || b.tasks[k] != nil {
		return
	}
	b.add(&taskState{
		Task: transition.Task{Kind: v.Kind, Status: store.TaskRunning, Attempt: res.Attempt, Claim: v.Claim},
		key:  k, run: r, signature: v.Signature, children: v.Children,
		startedEvent: v.StartedEvent, lease: v.StartedEvent, ctid: v.Ctid,
		expectClaim: v.Claim,
	})
}

// claimMoved reports whether err is dagen_claim_moved's.
func claimMoved(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "DGN01"
}

// toRead returns the keys of the results not decided on views, with the
// mapped tasks of elements (withMappedTasks): the tasks a completion reads.
func toRead(results []store.TaskResult, views []leasebook.View) []taskKey {
	keys := make([]taskKey, 0, len(results))
	for i := range results {
		if !leasebook.Decides(views, i) {
			keys = append(keys, taskKey{results[i].RunID, results[i].Step})
		}
	}
	return withMappedTasks(keys)
}
