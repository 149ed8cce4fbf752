package pgstore

import (
	"context"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// returned returns the indexes of the results whose runs a completion
// reads back (store.TaskResult.ReturnRun): those that finished their
// runs, one a run.
func returned(results []store.TaskResult, out []store.CompletionOutcome) []int {
	var back []int
	seen := map[dag.RunID]bool{}
	for i := range results {
		if results[i].ReturnRun && out[i].Outcome != store.OutcomeStale && out[i].RunStatus.Terminal() && !seen[results[i].RunID] {
			seen[results[i].RunID] = true
			back = append(back, i)
		}
	}
	return back
}

// readBack reads the runs of the results at back, as ReadRun does, into
// their outcomes' Finished: queued after the COMMIT, they go with it, so
// the waiter of a run a completion finished needs no read of its own. The
// first run's GetRun sends the COMMIT; every other query is sent ahead
// with it (see pipeline.queryAhead), so the whole takes one round trip.
func (s *Store) readBack(ctx context.Context, p *pipeline, results []store.TaskResult, out []store.CompletionOutcome, back []int) error {
	for n, i := range back {
		id := uuidOf(results[i].RunID)
		if n > 0 {
			p.queryAhead(record(func(db dbsqlc.DBTX) error {
				_, err := s.q.GetRun(ctx, db, id)
				return err
			}))
		}
		p.queryAhead(record(func(db dbsqlc.DBTX) error {
			_, err := s.q.ListTasks(ctx, db, id)
			return err
		}))
	}
	for _, i := range back {
		id := results[i].RunID
		r, err := s.q.GetRun(ctx, p, uuidOf(id))
		run, err := runOf(id, r, err)
		if err != nil {
			_ = p.closeOpen()
			return err
		}
		rows, err := s.q.ListTasks(ctx, p, uuidOf(id))
		tasks, err := tasksOf(id, rows, err)
		if err != nil {
			_ = p.closeOpen()
			return err
		}
		out[i].Finished = &store.FinishedRun{Run: run, Tasks: tasks}
	}
	return nil
}
