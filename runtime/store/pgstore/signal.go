package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// consumeSignals makes the held signals of the waits await completed
// their outputs.
func (b *batch) consumeSignals(ctx context.Context) error {
	var ids []pgtype.UUID
	var names []string
	for _, ct := range b.tr.Changed {
		if t := b.state(ct); t.Consume {
			ids = append(ids, uuidOf(t.key.run))
			names = append(names, t.key.name)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := b.s.q.ConsumeSignals(ctx, b.tx.Queue(), ids, names); err != nil {
		return fmt.Errorf("consume %d held signals: %w", len(ids), err)
	}
	return nil
}

// SendSignal implements store.Signaler. It locks the run, as every writer
// of its tasks does, so sends to one wait, from any number of processes,
// are applied one at a time.
func (s *Store) SendSignal(ctx context.Context, id dag.RunID, step string, payload []byte) (bool, error) {
	var delivered bool
	var queued int
	var refused error // why the send is refused: the transaction then rolls back
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		var err error
		delivered, queued, refused, err = s.sendSignal(ctx, s.newBatch(tx, 1), "", id, step, payload)
		if err == nil && refused != nil {
			return errNothingToDo
		}
		return err
	})
	if refused != nil {
		return false, refused
	}
	if err != nil {
		return false, fmt.Errorf("send signal: %w", err)
	}
	s.noteQueued(ctx, queued)
	return delivered, nil
}

// sendSignal is SendSignal's work in b's transaction, the store's own or
// the caller's (SendSignalTx). It returns whether the signal was
// delivered, how many tasks it queued, and why it is refused, if it is
// (then it wrote nothing). A workflow that is not empty must be the run's.
func (s *Store) sendSignal(ctx context.Context, b *batch, workflow string, id dag.RunID, step string, payload []byte) (delivered bool, queued int, refused, err error) {
	k := taskKey{id, step}
	if err := b.lockRunsAndLoad(ctx, nil, []taskKey{k}); err != nil {
		return false, 0, nil, err
	}
	if r := b.runs[id]; r != nil && workflow != "" && r.workflow != workflow {
		return false, 0, fmt.Errorf("run %s is of workflow %q, not %q: %w", id, r.workflow, workflow, store.ErrNotSignal), nil
	}
	if refused = refusal(b.runs[id], b.tasks[k], id, step); refused != nil {
		return false, 0, refused, nil
	}
	t := b.tasks[k]
	if t.Status != store.TaskAwaiting {
		if err := s.q.HoldSignal(ctx, b.tx.Queue(), dbsqlc.HoldSignalParams{Payload: payload, RunID: uuidOf(id), Name: step}); err != nil {
			return false, 0, nil, fmt.Errorf("hold the signal: %w", err)
		}
		b.tr.Signal(&t.Task, payload)
		return false, 0, nil, b.flush(ctx)
	}
	if !t.WakeAt.IsZero() {
		_ = s.q.DeleteTaskTimer(ctx, b.tx.Queue(), uuidOf(id), step)
	}
	b.tr.Signal(&t.Task, payload)
	if err := b.flush(ctx); err != nil {
		return false, 0, nil, err
	}
	return true, b.credit[0], nil, nil
}

// refusal says why a signal for step of run id cannot be sent, with the
// error store.Signaler names, or nil when it can: r and t are the locked
// run and the loaded task, nil when there is none.
func refusal(r *runState, t *taskState, id dag.RunID, step string) error {
	switch {
	case r == nil:
		return fmt.Errorf("run %s: %w", id, store.ErrRunNotFound)
	case t == nil || t.Kind != store.KindSignal:
		return fmt.Errorf("step %q: %w", step, store.ErrNotSignal)
	case t.Status.Terminal():
		return fmt.Errorf("step %q is %s: %w", step, t.Status, store.ErrSignalResolved)
	case t.Held:
		return fmt.Errorf("step %q: %w", step, store.ErrSignalHeld)
	case r.Status.Terminal():
		return fmt.Errorf("run %s is %s: %w", id, r.Status, store.ErrRunFinished)
	}
	return nil
}
