package pgstore

import (
	"context"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// returned returns the indexes of the results whose runs a completion
// reads back (store.TaskResult.ReturnRun): those that finished their
// runs, one a run.
func returned(results []store.TaskResult, out []store.CompletionOutcome) []int {
	var back []int
	var seen map[dag.RunID]bool // made for the first: most batches ask for none
	for i := range results {
		if !results[i].ReturnsRun(out[i]) || seen[results[i].RunID] {
			continue
		}
		if seen == nil {
			seen = map[dag.RunID]bool{}
		}
		seen[results[i].RunID] = true
		back = append(back, i)
	}
	return back
}

// readBack reads the runs of the results at back, as ReadRun does, into
// their outcomes' Finished: queued after the COMMIT, they go with it (see
// readRuns), so the waiter of a run a completion finished needs no read of
// its own.
func (s *Store) readBack(ctx context.Context, p *pipeline.Pipeline, results []store.TaskResult, out []store.CompletionOutcome, back []int) error {
	if len(back) == 0 {
		return nil
	}
	ids := make([]dag.RunID, len(back))
	for n, i := range back {
		ids[n] = results[i].RunID
	}
	runs, err := s.readRuns(ctx, p, ids)
	if err != nil {
		return err
	}
	for n, i := range back {
		out[i].Finished = &runs[n]
	}
	return nil
}

// readRuns reads runs and their tasks on p, in one round trip that also
// carries what p has queued: the first run's GetRun is sent with it, and
// every other query ahead of it (see pipeline.Pipeline.QueryAhead).
func (s *Store) readRuns(ctx context.Context, p *pipeline.Pipeline, ids []dag.RunID) ([]store.FinishedRun, error) {
	for n, id := range ids {
		if n > 0 {
			p.QueryAhead(pipeline.Record(func(db dbsqlc.DBTX) error {
				_, err := s.q.GetRun(ctx, db, uuidOf(id))
				return err
			}))
		}
		p.QueryAhead(pipeline.Record(func(db dbsqlc.DBTX) error {
			_, err := s.q.ListTasks(ctx, db, uuidOf(id))
			return err
		}))
	}
	runs := make([]store.FinishedRun, len(ids))
	for n, id := range ids {
		r, err := s.q.GetRun(ctx, p.Queue(), uuidOf(id))
		run, err := runOf(id, r, err)
		if err != nil {
			_ = p.DiscardAhead()
			return nil, err
		}
		rows, err := s.q.ListTasks(ctx, p.Queue(), uuidOf(id))
		tasks, err := tasksOf(id, rows, err)
		if err != nil {
			_ = p.DiscardAhead()
			return nil, err
		}
		runs[n] = store.FinishedRun{Run: run, Tasks: tasks}
	}
	return runs, nil
}
