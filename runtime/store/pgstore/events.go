package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// events collects event rows to insert with one statement.
type events struct{ p dbsqlc.InsertEventsParams }

// add appends a new event, at the batch's time.
func (e *events) add(run dag.RunID, task string, typ store.EventType, attempt int, detail string) {
	e.addAt(run, 0, pgtype.Timestamptz{}, task, typ, attempt, detail)
}

// addKept appends an event a task row kept until now, with its id and time.
func (e *events) addKept(run dag.RunID, id int64, at time.Time, task string, typ store.EventType, attempt int) {
	e.addAt(run, id, tstz(at), task, typ, attempt, "")
}

func (e *events) addAt(run dag.RunID, id int64, at pgtype.Timestamptz, task string, typ store.EventType, attempt int, detail string) {
	e.p.RunIds = append(e.p.RunIds, uuidOf(run))
	e.p.Ids = append(e.p.Ids, id)
	e.p.Ats = append(e.p.Ats, at)
	e.p.Tasks = append(e.p.Tasks, task)
	e.p.Types = append(e.p.Types, string(typ))
	e.p.Attempts = append(e.p.Attempts, int32(attempt))
	e.p.Details = append(e.p.Details, detail)
}

// insert writes the events; those without a time of their own at time at
// (NULL: the database clock).
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
