package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/leasebook"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// CompleteTasks implements store.Store: one transaction per batch, with a
// fixed number of statements whatever the batch size.
func (s *Store) CompleteTasks(ctx context.Context, results []store.TaskResult) ([]store.CompletionOutcome, error) {
	return s.completeTasks(ctx, results, nil)
}

// completeTasks is CompleteTasks, and CompleteAndContinue when cont is set.
//
// Completed results of attempts this store claimed are decided on what the
// claim returned (leasebook.View) rather than on rows read again; when one of
// those rows moved on since (UpdateTasks fails the transaction), the batch
// is decided again, and written, on the rows it reads.
func (s *Store) completeTasks(ctx context.Context, results []store.TaskResult, cont *continuation) ([]store.CompletionOutcome, error) {
	if len(results) == 0 {
		return []store.CompletionOutcome{}, nil
	}
	views := s.leases.ViewsFor(results)
	out, err := s.completeOnce(ctx, results, cont, views)
	if views != nil && claimMoved(err) {
		if cont != nil {
			*cont = continuation{p: cont.p}
		}
		out, err = s.completeOnce(ctx, results, cont, nil)
	}
	if err != nil && !errors.Is(err, errNothingToDo) {
		return nil, fmt.Errorf("complete %d tasks: %w", len(results), err)
	}
	s.leases.Answered(results)
	if cont != nil {
		s.leases.Claimed(leasebook.LeaseOf(cont.lease, cont.claimed), cont.claimed, cont.views)
	}
	enqueued := 0
	for _, o := range out {
		enqueued += o.Enqueued
	}
	s.noteQueued(ctx, enqueued)
	return out, nil
}

// completeOnce is one transaction of completeTasks: views, by result, are
// the claim views the results are decided on (nil: none).
func (s *Store) completeOnce(ctx context.Context, results []store.TaskResult, cont *continuation, views []leasebook.View) ([]store.CompletionOutcome, error) {
	out := make([]store.CompletionOutcome, len(results))
	var back []int // the results whose runs are read back: see readBack
	err := pipeline.InTx(ctx, s.pool, func(tx *pipeline.Tx) error {
		b := s.newBatch(tx, len(results))
		b.cont = cont
		// The batch's statements run the generic plans their connection
		// cached, as claims do: left to choose, Postgres plans each
		// connection's first executions of a statement for their
		// parameters, and plans again after every ANALYZE of a range that
		// fills, and a completion's statements cost more to plan than to
		// run (see docs/performance.md, "Completions keep their generic
		// plan"). DeleteLeases runs a plan that takes the index
		// (deleteLeases).
		if err := s.keepGenericPlan(ctx, tx.Queue()); err != nil { // queued: it cannot fail here
			return err
		}
		ids := make([]dag.RunID, len(results))
		for i := range results {
			ids[i] = results[i].RunID
		}
		if err := b.lockRunsAndLoad(ctx, ids, toRead(results, views)); err != nil {
			return err
		}
		for i := range results {
			if leasebook.Decides(views, i) {
				b.fromView(&results[i], &views[i])
			}
		}
		for i := range results {
			out[i] = b.apply(i, &results[i])
		}
		if !b.changed() {
			return errNothingToDo
		}
		if err := b.collect(ctx); err != nil {
			return err
		}
		children := b.prepareChildren()
		if err := children.lockTenants(ctx, b); err != nil {
			return err
		}
		if err := b.flush(ctx); err != nil {
			return err
		}
		if err := children.create(ctx, b, tx); err != nil {
			return err
		}
		for i := range out {
			out[i].Enqueued = b.credit[i]
			out[i].TimerDue = b.due
		}
		back = returned(results, out)
		return nil
	}, func(tx *pipeline.Tx) error {
		return s.readBack(ctx, &tx.Pipeline, results, out, back)
	})
	return out, err
}

// FireTimers implements store.Store. Due timers are read without locks,
// and without a transaction, so a poll with none due is one round trip;
// their runs are locked with SKIP LOCKED (a run another worker is writing
// waits for the next poll), and a timer fires only for the transaction
// whose DELETE removes it, so it fires exactly once.
func (s *Store) FireTimers(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	due, err := s.q.DueTimers(ctx, s.pool, s.clock(), int32(min(limit, 1<<30)))
	if err != nil {
		return 0, fmt.Errorf("fire timers: read due timers: %w", err)
	}
	var buckets []bucketKey
	due = slices.DeleteFunc(due, func(d dbsqlc.DueTimersRow) bool {
		if d.RateLimit.Valid {
			buckets = append(buckets, bucketKey{d.RateLimit.String, d.RateKey.String})
		}
		return d.RateLimit.Valid
	})
	admitted := 0
	if len(buckets) > 0 {
		if admitted, err = s.admitRated(ctx, buckets); err != nil {
			return 0, fmt.Errorf("fire timers: %w", err)
		}
	}
	if len(due) == 0 {
		return admitted, nil
	}
	fired := admitted
	err = s.inTx(ctx, func(tx *pipeline.Tx) error {
		b := s.newBatch(tx, len(due))
		ids := make([]dag.RunID, len(due))
		for i, d := range due {
			ids[i] = dag.RunID(d.RunID.Bytes)
		}
		if err := b.lockRuns(ctx, ids, true); err != nil {
			return err
		}
		var keys []taskKey
		order := make(map[taskKey]int, len(due))
		for i, d := range due {
			k := taskKey{dag.RunID(d.RunID.Bytes), d.Task}
			if b.runs[k.run] != nil {
				keys = append(keys, k)
				order[k] = i
			}
		}
		if len(keys) == 0 {
			return errNothingToDo
		}
		var tp struct {
			ids   []dag.RunID
			names []string
		}
		for _, k := range keys {
			tp.ids = append(tp.ids, k.run)
			tp.names = append(tp.names, k.name)
		}
		taken, err := s.q.TakeTimers(ctx, tx.Queue(), takeTimersParams(tp.ids, tp.names, b.now))
		if err != nil {
			return fmt.Errorf("take %d timers: %w", len(keys), err)
		}
		if len(taken) == 0 {
			return errNothingToDo
		}
		// Fire in wake order, as read.
		fire := make([]*timer, len(due))
		var takenKeys []taskKey
		for _, t := range taken {
			k := taskKey{dag.RunID(t.RunID.Bytes), t.Task}
			fire[order[k]] = &timer{key: k, attempt: int(t.Attempt), claim: t.Claim, kind: t.Kind}
			takenKeys = append(takenKeys, k)
		}
		// A child timer may resolve an element, which counts down on its
		// mapped task.
		if err := b.loadTasks(ctx, withMappedTasks(takenKeys)); err != nil {
			return err
		}
		children, err := b.childOutcomes(ctx, fire)
		if err != nil {
			return err
		}
		var cancelled []dag.RunID
		for src, tm := range fire {
			if tm == nil {
				continue
			}
			switch tm.kind {
			case "deadline":
				if r := b.runs[tm.key.run]; r != nil && b.tr.TimeOut(&r.Run, src) {
					fired++
				}
				continue
			case transition.TimerCancel:
				if r := b.runs[tm.key.run]; r != nil && b.tr.CancelRun(&r.Run) {
					fired++
					cancelled = append(cancelled, r.ID)
				}
				continue
			case transition.TimerChild:
				o, ok := children[attemptKey{tm.key, tm.attempt}]
				if t := b.tasks[tm.key]; ok && t != nil && b.tr.ChildEnded(&t.Task, tm.attempt, tm.claim, o, src) {
					fired++
				}
				continue
			}
			// A stale timer does nothing: deleting it was all there was
			// to do.
			if t := b.tasks[tm.key]; t != nil && b.tr.Fire(&t.Task, tm.kind, tm.attempt, tm.claim, src) {
				fired++
			}
		}
		if err := b.collect(ctx); err != nil {
			return err
		}
		if len(cancelled) > 0 {
			// Workers running their steps hear of it on commit.
			if err := s.q.NotifyCancelled(ctx, tx.Queue(), uuids(cancelled)); err != nil {
				return fmt.Errorf("notify: %w", err)
			}
		}
		return b.flush(ctx)
	})
	if err != nil && !errors.Is(err, errNothingToDo) {
		return 0, fmt.Errorf("fire timers: %w", err)
	}
	if err != nil {
		return 0, nil
	}
	s.noteQueued(ctx, fired)
	return fired, nil
}

type timer struct {
	key     taskKey
	attempt int
	claim   int64
	kind    string
}

// RescueExpired implements store.Store. A task with attempts left is
// enqueued again with a RESCUED event; one without fails with "lease
// expired", failing its run. A task whose run has ended (failed while the
// attempt ran) is cancelled instead of enqueued, unless it is the onfailure
// task. A task whose worker heartbeats (store.Workers) is not rescued: its
// lease moves up to the worker's deadline instead.
//
// A lease covers every task of one claim (migration 012): the tasks that
// still hold it (RUNNING at the attempt it lists) are rescued, or the
// lease moves up when their worker is alive; a lease that none holds any
// more is deleted. limit counts tasks, but leases are taken whole.
func (s *Store) RescueExpired(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	// Runs an admission skipped are rescued too (see sweepSlots).
	if _, err := s.sweepSlots(ctx); err != nil {
		return 0, fmt.Errorf("rescue expired tasks: %w", err)
	}
	n := 0
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		if err := s.fenced(ctx, tx.Queue()); err != nil {
			return err
		}
		cands, err := s.q.RescueCandidates(ctx, tx.Queue(), s.clock(), int64(limit))
		if err != nil {
			return fmt.Errorf("read expired leases: %w", err)
		}
		if len(cands) == 0 {
			return errNothingToDo
		}
		b := s.newBatch(tx, len(cands))
		keys := make([]taskKey, len(cands))
		for i, c := range cands {
			keys[i] = taskKey{dag.RunID(c.RunID.Bytes), c.Name}
		}
		if err := b.lockRunsAndLoad(ctx, nil, keys); err != nil {
			return err
		}
		var ext struct {
			ids    []int64
			untils []pgtype.Timestamptz
		}
		// The candidates come a lease at a time: cands[first:end].
		for first, end := 0, 0; first < len(cands); first = end {
			c := cands[first]
			for end = first + 1; end < len(cands) && cands[end].ID == c.ID; end++ {
			}
			var held []int // entries whose task still holds the lease
			for src := first; src < end; src++ {
				// Re-check under the run lock: the attempt may have finished.
				if t := b.tasks[keys[src]]; t != nil && t.Status == store.TaskRunning && t.lease == cands[src].Event {
					held = append(held, src)
				}
			}
			switch {
			case len(held) == 0:
				b.dropped = append(b.dropped, leasebook.Lease{ID: c.ID, Token: c.Token})
			case !c.LeaseUntil.Valid || c.LeaseUntil.Time.After(b.now):
				// Only the leader moves leases, so c.LeaseUntil is current.
			case c.AliveUntil.Valid && c.AliveUntil.Time.After(b.now):
				ext.ids = append(ext.ids, c.ID)
				ext.untils = append(ext.untils, c.AliveUntil)
			default:
				for _, src := range held {
					n++
					b.tr.Rescue(&b.tasks[keys[src]].Task, src)
				}
				b.dropped = append(b.dropped, leasebook.Lease{ID: c.ID, Token: c.Token})
			}
		}
		if len(ext.ids) > 0 {
			if err := s.q.ExtendLeases(ctx, tx.Queue(), ext.ids, ext.untils); err != nil {
				return fmt.Errorf("extend %d leases: %w", len(ext.ids), err)
			}
		}
		if !b.changed() {
			return b.endLeases(ctx, tx.Queue()) // and commit the extended leases, if any
		}
		return b.flush(ctx)
	})
	if err != nil && !errors.Is(err, errNothingToDo) {
		return 0, fmt.Errorf("rescue expired tasks: %w", err)
	}
	return n, nil
}

// CancelRun implements store.Store, as a CancelRuns batch of one run.
func (s *Store) CancelRun(ctx context.Context, id dag.RunID) (bool, error) {
	found, cancelled := false, false
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		n, ids, err := s.cancelLocked(ctx, tx, []dag.RunID{id})
		found, cancelled = n == 1, len(ids) == 1
		return err
	})
	if err != nil && !errors.Is(err, errNothingToDo) {
		return false, fmt.Errorf("cancel run %s: %w", id, err)
	}
	if !found {
		return false, fmt.Errorf("cancel run %s: %w", id, store.ErrRunNotFound)
	}
	return cancelled, nil
}
