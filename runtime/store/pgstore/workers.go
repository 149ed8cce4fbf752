package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// Heartbeat implements store.Workers with one statement, an upsert of the
// worker's narrow row and a lookup of its runs, and a lookup of the
// attempts leased to it that it does not hold.
func (s *Store) Heartbeat(ctx context.Context, worker string, ttl time.Duration, held []store.HeldAttempt) ([]dag.RunID, error) {
	runs := make([]dag.RunID, 0, len(held))
	claims := make([]int64, len(held))
	seen := make(map[dag.RunID]bool, len(held))
	for i, a := range held {
		claims[i] = a.Claim
		if !seen[a.RunID] {
			seen[a.RunID] = true
			runs = append(runs, a.RunID)
		}
	}
	ids, err := s.q.Heartbeat(ctx, s.pool, dbsqlc.HeartbeatParams{
		Now:        s.clock(),
		Worker:     worker,
		TtlSeconds: ttl.Seconds(),
		RunIds:     uuids(runs),
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat of worker %s: %w", worker, err)
	}
	var cancelled []dag.RunID
	for _, id := range ids {
		cancelled = append(cancelled, dag.RunID(id.Bytes))
	}
	lost, err := s.q.NotHeldTasks(ctx, s.pool, dbsqlc.NotHeldTasksParams{
		Worker: worker, Held: claims, Now: s.clock(), TtlSeconds: ttl.Seconds(),
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat of worker %s: find attempts it does not hold: %w", worker, err)
	}
	if len(lost) > 0 {
		keys := make([]taskKey, len(lost))
		claims := make([]int64, len(lost))
		for i, r := range lost {
			keys[i] = taskKey{dag.RunID(r.RunID.Bytes), r.Name}
			claims[i] = r.Claim
		}
		if _, err := s.releaseTasks(ctx, worker, keys, claims, store.NotHeldDetail); err != nil {
			return nil, fmt.Errorf("heartbeat of worker %s: release attempts it does not hold: %w", worker, err)
		}
	}
	return cancelled, nil
}

// RetireWorker implements store.Workers. Released tasks are enqueued again
// in one transaction, whatever attempts they have left, and their
// max_attempts grows by one so the released attempt does not count.
func (s *Store) RetireWorker(ctx context.Context, worker string, release bool) (int, error) {
	if err := s.q.DeleteWorker(ctx, s.pool, worker); err != nil {
		return 0, fmt.Errorf("retire worker %s: %w", worker, err)
	}
	if !release {
		return 0, nil
	}
	var keys []taskKey
	rows, err := s.q.WorkerTasks(ctx, s.pool, worker)
	if err != nil {
		return 0, fmt.Errorf("retire worker %s: read running tasks: %w", worker, err)
	}
	for _, r := range rows {
		keys = append(keys, taskKey{dag.RunID(r.RunID.Bytes), r.Name})
	}
	n, err := s.releaseTasks(ctx, worker, keys, nil, store.ReleasedDetail)
	if err != nil {
		return 0, fmt.Errorf("retire worker %s: release tasks: %w", worker, err)
	}
	return n, nil
}

// releaseTasks hands the tasks with these keys that worker runs back, in
// one transaction (with claims, by key, only while they are RUNNING under
// that claim): each is enqueued again whatever attempts it has left,
// with a RESCUED event of that detail, and its max_attempts grows by one so
// the released attempt does not count. A task of a run that is no longer
// RUNNING is cancelled instead (but an onfailure task). It returns how many
// it released or cancelled.
func (s *Store) releaseTasks(ctx context.Context, worker string, keys []taskKey, claims []int64, detail string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	n := 0
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		b := s.newBatch(tx, len(keys))
		if err := b.lockRunsAndLoad(ctx, nil, keys); err != nil {
			return err
		}
		var granted struct {
			RunIds []pgtype.UUID
			Names  []string
		}
		for src, k := range keys {
			// Re-check under the run lock; the worker is recorded with the
			// attempt, so a task claimed again since is not this worker's.
			t := b.tasks[k]
			if t == nil || t.Status != store.TaskRunning || t.worker != worker || (claims != nil && t.Claim != claims[src]) {
				continue
			}
			n++
			if !b.tr.Release(&t.Task, detail, src) {
				continue // a failed or cancelled run schedules nothing new
			}
			granted.RunIds = append(granted.RunIds, uuidOf(k.run))
			granted.Names = append(granted.Names, k.name)
		}
		if !b.changed() {
			return errNothingToDo
		}
		if len(granted.Names) > 0 {
			if err := s.q.GrantAttempts(ctx, tx.Queue(), granted.RunIds, granted.Names); err != nil {
				return fmt.Errorf("grant back %d released attempts: %w", len(granted.Names), err)
			}
		}
		return b.flush(ctx)
	})
	if err != nil && !errors.Is(err, errNothingToDo) {
		return 0, err
	}
	return n, nil
}

// PruneRuns implements store.Workers. The leader calls it every few
// heartbeats, and it prunes in two ways. First it drops whole ranges of
// run ids (the partitions of dagen_runs, dagen_tasks and dagen_events,
// made ahead here too) in which every run finished before cutoff: that
// costs a few catalog writes however many runs a range holds. Then it
// deletes up to limit finished runs one by one, made more than a period
// before cutoff: the finished runs of a range that a run still live in it
// keeps (a limit of 0 drops ranges only). Runs another transaction is
// writing are skipped until a later call. It returns how many runs went
// both ways. Where the server's autovacuum is off, it vacuums the queue
// tables too.
func (s *Store) PruneRuns(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	dropped, err := s.parts.Maintain(ctx, cutoff)
	if err != nil {
		return dropped, fmt.Errorf("prune runs finished before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	if err := s.vacuum.Queues(ctx); err != nil {
		return dropped, err
	}
	if limit <= 0 {
		return dropped, nil
	}
	deleted, err := s.deleteRuns(ctx, cutoff, limit)
	return dropped + deleted, err
}

// deleteRuns deletes up to limit runs that finished before cutoff, with
// everything of theirs, in one transaction.
func (s *Store) deleteRuns(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	// Concurrency slots no run holds or waits for go too (a trigger of
	// their key makes them again).
	if err := s.pruneSlots(ctx, limit); err != nil {
		return 0, fmt.Errorf("prune concurrency slots: %w", err)
	}
	var n int64
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		at := pgtype.Timestamptz{Time: cutoff, Valid: true}
		// A run made less than a period before the cutoff is in a range
		// that its drop will take whole: deleting it one by one first
		// would cost as much as the work did.
		madeBefore := pgtype.Timestamptz{Time: cutoff.Add(-s.parts.Period(cutoff)), Valid: true}
		if err := s.fenced(ctx, tx.Queue()); err != nil {
			return err
		}
		cands, err := s.q.PruneCandidates(ctx, tx.Queue(), dbsqlc.PruneCandidatesParams{MadeBefore: madeBefore, Cutoff: at, Max: int32(min(limit, 1<<30))})
		if err != nil {
			return fmt.Errorf("read finished runs: %w", err)
		}
		if len(cands) == 0 {
			return errNothingToDo
		}
		locked, err := s.q.LockPrunableRuns(ctx, tx.Queue(), cands, at)
		if err != nil {
			return fmt.Errorf("lock %d finished runs: %w", len(cands), err)
		}
		if len(locked) == 0 {
			return errNothingToDo
		}
		n, err = s.q.DeleteRuns(ctx, tx.Queue(), locked)
		if err != nil {
			return fmt.Errorf("delete %d runs: %w", len(locked), err)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNothingToDo) {
		return 0, fmt.Errorf("prune runs finished before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	if err != nil {
		return 0, nil
	}
	return int(n), nil
}
