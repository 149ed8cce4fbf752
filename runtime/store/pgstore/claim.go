package pgstore

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// ClaimTasks implements store.Store with a single statement (see
// queries/queue.sql): nothing is committed unless rows were claimed.
func (s *Store) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.q.ClaimTasks(ctx, s.pool, dbsqlc.ClaimTasksParams{
		Now:          s.clock(),
		Signatures:   nonNil(p.Signatures),
		Max:          int32(min(p.Limit, 1<<30)),
		Worker:       p.Worker,
		LeaseSeconds: p.Lease.Seconds(),
		Known:        uuidsOf(p.Known),
	})
	if err != nil {
		return nil, fmt.Errorf("claim tasks for worker %s: %w", p.Worker, err)
	}
	claimed := make([]store.ClaimedTask, len(rows))
	for i, r := range rows {
		c := store.ClaimedTask{
			RunID:        dag.RunID(r.RunID.Bytes),
			Workflow:     r.Workflow,
			Tenant:       r.Tenant,
			Step:         r.Name,
			Kind:         store.TaskKind(r.Kind),
			Attempt:      int(r.Attempt),
			Signature:    r.Signature,
			Input:        r.Input,
			InputOmitted: r.InputOmitted,
			Element:      int(r.Element),
		}
		parents, err := parentResults(r.ParentNames, r.ParentStatuses, r.ParentOutputs)
		if err != nil {
			return nil, fmt.Errorf("claim tasks for worker %s: task %s/%s: %w", p.Worker, c.RunID, c.Step, err)
		}
		c.Parents = parents
		if c.Kind == store.KindOnFailure && r.FailureStep.Valid {
			c.Failure = &dag.Failure{
				RunID:   c.RunID,
				Step:    r.FailureStep.String,
				Attempt: int(r.FailureAttempt.Int32),
				Message: r.FailureMessage.String,
			}
		}
		claimed[i] = c
	}
	return claimed, nil
}

// nonNil returns s, or an empty slice for nil: pgx sends a nil slice as
// NULL, and the claim query reads an empty array as "any signature".
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
