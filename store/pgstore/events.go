package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/dag"
	"github.com/dagenhq/dagen/store"
	"github.com/dagenhq/dagen/store/pgstore/internal/dbsqlc"
)

// events collects event rows to insert with one statement.
type events struct{ p dbsqlc.InsertEventsParams }

func (e *events) add(run dag.RunID, task string, typ store.EventType, attempt int, detail string) {
	e.p.RunIds = append(e.p.RunIds, uuidOf(run))
	e.p.Tasks = append(e.p.Tasks, task)
	e.p.Types = append(e.p.Types, string(typ))
	e.p.Attempts = append(e.p.Attempts, int32(attempt))
	e.p.Details = append(e.p.Details, detail)
}

// insert writes the events, all at time at (NULL: the database clock).
func (e *events) insert(ctx context.Context, q *dbsqlc.Queries, db dbsqlc.DBTX, at pgtype.Timestamptz) error {
	if len(e.p.RunIds) == 0 {
		return nil
	}
	e.p.At = at
	if err := q.InsertEvents(ctx, db, e.p); err != nil {
		return fmt.Errorf("insert %d events: %w", len(e.p.RunIds), err)
	}
	return nil
}
