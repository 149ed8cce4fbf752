package pgstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// Child runs (store.KindChild, migration 018). No transaction locks a
// child run and then its parent, or a parent and then its child: runs are
// locked in id order, and a child's id is not ordered with its parent's
// against the other runs of a batch. So a run's end only sets timers, due
// at once: on its parent's task (WakeParents), and on its children still
// under way when it did not complete (CancelChildren); the units that
// fire them lock one run each.

// newChildren are the child runs a batch creates: validated, with the
// parameters that insert them.
type newChildren struct {
	runs   []store.NewRun
	graphs []*graph
	rp     dbsqlc.InsertRunsParams
	tasks  []*transition.Task // the task that starts each
	srcs   []int
}

// prepareChildren validates the child runs the core decided to start. A
// child that cannot be created fails its task for good, a decision like
// the others: the engine built it from a registered definition, so it is a
// bug there, not something a retry mends.
func (b *batch) prepareChildren() *newChildren {
	if len(b.tr.Children) == 0 {
		return nil
	}
	nc := &newChildren{}
	seen := make(map[dag.RunID]bool, len(b.tr.Children))
	shared := make(map[taskList]*graph, 1) // the children of one workflow share a graph
	for _, c := range b.tr.Children {
		if c.Task.Status != store.TaskAwaiting || c.Task.Run.Status != store.RunRunning {
			continue
		}
		g, err := validate(c.Run, shared)
		if err == nil && seen[c.Run.ID] {
			err = fmt.Errorf("create run %s: %w (twice in one batch)", c.Run.ID, store.ErrRunExists)
		}
		seen[c.Run.ID] = true
		if err != nil {
			b.tr.Fail(c.Task, fmt.Sprintf("start child run of %s: %v", c.Run.Workflow, err), c.Src)
			continue
		}
		nc.runs = append(nc.runs, *c.Run)
		nc.graphs = append(nc.graphs, g)
		nc.tasks = append(nc.tasks, c.Task)
		nc.srcs = append(nc.srcs, c.Src)
	}
	// A failure above may have ended a run with another child here.
	kept := 0
	for i, t := range nc.tasks {
		if t.Run.Status == store.RunRunning {
			nc.runs[kept], nc.graphs[kept], nc.tasks[kept], nc.srcs[kept] = nc.runs[i], nc.graphs[i], t, nc.srcs[i]
			kept++
		}
	}
	nc.runs, nc.graphs, nc.tasks, nc.srcs = nc.runs[:kept], nc.graphs[:kept], nc.tasks[:kept], nc.srcs[:kept]
	if len(nc.runs) == 0 {
		return nil
	}
	nc.rp = b.s.insertRunsParams(nc.runs, nc.graphs)
	return nc
}

// lockTenants locks, before the batch's flush, the fair queue's rows of
// every tenant the batch may enqueue for: its runs' and its children's.
// The flush's Enqueue and then the children's each lock their tenants in
// tenant order, but two statements in a row do not: a batch holding
// tenant b from its flush and waiting for a from its children deadlocked
// with one holding a and waiting for b, and with the triggers and timers
// queued behind them. Taken here, in one statement and in order, the
// later enqueues wait for nothing.
func (nc *newChildren) lockTenants(ctx context.Context, b *batch) error {
	if nc == nil {
		return nil
	}
	var tenants []string
	for _, r := range b.runs {
		tenants = append(tenants, r.tenant)
	}
	for i := range nc.runs {
		tenants = append(tenants, nc.runs[i].Tenant)
	}
	slices.Sort(tenants)
	tenants = slices.Compact(tenants)
	if err := b.s.q.LockTenants(ctx, b.tx.Queue(), tenants); err != nil {
		return fmt.Errorf("lock the queue of %d tenants: %w", len(tenants), err)
	}
	return nil
}

// create creates the child runs in the batch's transaction, after its
// flush, and links them to their parents' task attempts. A child whose key
// is taken is not created: its task waits for the run that has it.
func (nc *newChildren) create(ctx context.Context, b *batch, tx *pipeline.Tx) error {
	if nc == nil {
		return nil
	}
	rp := nc.rp
	rp.Now = tstz(b.now)
	_, _, _, err := b.s.createWithin(ctx, tx, nc.runs, nc.graphs, rp, store.ClaimParams{}, false)
	if err != nil {
		return fmt.Errorf("create %d child runs: %w", len(nc.runs), err)
	}
	var sp dbsqlc.SetParentsParams
	for i := range nc.runs {
		nr := &nc.runs[i]
		if !nr.Existing.IsZero() || nr.Parent == nil {
			continue
		}
		sp.Ids = append(sp.Ids, uuidOf(nr.ID))
		sp.ParentRuns = append(sp.ParentRuns, uuidOf(nr.Parent.Run))
		sp.ParentTasks = append(sp.ParentTasks, nr.Parent.Task)
		sp.ParentAttempts = append(sp.ParentAttempts, int32(nr.Parent.Attempt))
		sp.ParentClaims = append(sp.ParentClaims, nr.Parent.Claim)
		sp.ResultTasks = append(sp.ResultTasks, nr.Parent.Result)
		// Its roots, queued (unless its cap holds it): one credit is
		// enough for the workers to hear of new work.
		b.credit[nc.srcs[i]]++
	}
	if len(sp.Ids) == 0 {
		return nil
	}
	if err := b.s.q.SetParents(ctx, tx.Queue(), sp); err != nil {
		return fmt.Errorf("link %d child runs: %w", len(sp.Ids), err)
	}
	return nil
}

// childEnds sets the timers the runs that ended in the batch set: on the
// task of each one's parent, and on the children still under way of each
// one that did not complete.
func (b *batch) childEnds(ctx context.Context) error {
	var woken, ended []pgtype.UUID
	for _, r := range b.tr.Ended {
		rs := b.runs[r.ID]
		if rs != nil && rs.hasParent {
			woken = append(woken, uuidOf(r.ID))
		}
		if r.End != transition.EndCompleted {
			ended = append(ended, uuidOf(r.ID))
		}
	}
	now := tstz(b.now)
	if len(woken) > 0 {
		b.due = true
		if err := b.s.q.WakeParents(ctx, b.tx.Queue(), now, woken); err != nil {
			return fmt.Errorf("wake the parents of %d child runs: %w", len(woken), err)
		}
	}
	if len(ended) > 0 {
		b.due = true
		if err := b.s.q.CancelChildren(ctx, b.tx.Queue(), now, ended); err != nil {
			return fmt.Errorf("cancel the children of %d runs: %w", len(ended), err)
		}
	}
	return nil
}

// attemptKey is a task's attempt.
type attemptKey struct {
	task    taskKey
	attempt int
}

// childOutcomes reads how the children of the child timers among fire
// ended, by the parent task attempt that started each.
func (b *batch) childOutcomes(ctx context.Context, fire []*timer) (map[attemptKey]transition.ChildOutcome, error) {
	var p dbsqlc.ChildOutcomesParams
	for _, tm := range fire {
		if tm != nil && tm.kind == transition.TimerChild {
			p.ParentRuns = append(p.ParentRuns, uuidOf(tm.key.run))
			p.ParentTasks = append(p.ParentTasks, tm.key.name)
			p.ParentAttempts = append(p.ParentAttempts, int32(tm.attempt))
		}
	}
	if len(p.ParentRuns) == 0 {
		return nil, nil
	}
	rows, err := b.s.q.ChildOutcomes(ctx, b.tx.Queue(), p)
	if err != nil {
		return nil, fmt.Errorf("read the outcomes of %d child runs: %w", len(p.ParentRuns), err)
	}
	outcomes := make(map[attemptKey]transition.ChildOutcome, len(rows))
	for _, r := range rows {
		o := transition.ChildOutcome{
			ID: dag.RunID(r.ID.Bytes), Workflow: r.Workflow, Status: store.RunStatus(r.Status),
			Result: r.ResultTask, ResultStatus: store.TaskStatus(r.ResultStatus.String), Output: r.ResultOutput,
		}
		if r.FailureStep.Valid {
			o.Failure = &dag.Failure{RunID: o.ID, Step: r.FailureStep.String, Attempt: int(r.FailureAttempt.Int32), Message: r.FailureMessage.String}
		}
		outcomes[attemptKey{taskKey{dag.RunID(r.ParentRun.Bytes), r.ParentTask.String}, int(r.ParentAttempt.Int32)}] = o
	}
	return outcomes, nil
}

// ListChildren implements store.Operator.
func (s *Store) ListChildren(ctx context.Context, id dag.RunID) ([]store.ChildRun, error) {
	rows, err := s.q.ListChildren(ctx, s.pool, uuidOf(id))
	if err != nil {
		return nil, fmt.Errorf("list children of run %s: %w", id, err)
	}
	if len(rows) == 0 {
		ok, err := s.q.RunExists(ctx, s.pool, uuidOf(id))
		if err != nil {
			return nil, fmt.Errorf("list children of run %s: %w", id, err)
		}
		if !ok {
			return nil, fmt.Errorf("list children of run %s: %w", id, store.ErrRunNotFound)
		}
	}
	out := make([]store.ChildRun, len(rows))
	for i, r := range rows {
		out[i] = store.ChildRun{
			ID: dag.RunID(r.ID.Bytes), Workflow: r.Workflow, Status: store.RunStatus(r.Status),
			Task: r.ParentTask.String, Attempt: int(r.ParentAttempt.Int32),
			CreatedAt: timeOf(r.CreatedAt), FinishedAt: timeOf(r.FinishedAt),
		}
	}
	return out, nil
}
