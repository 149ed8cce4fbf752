package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/groupcommit"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/leasebook"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// CreateRuns implements store.Store. The runs, their tasks (the roots with
// their QUEUED events) and the roots' queue entries are written with one
// statement each, all sent in one round trip and run in one transaction.
// Calls made at once share that transaction (see groupcommit.Group).
func (s *Store) CreateRuns(ctx context.Context, runs []store.NewRun) error {
	_, err := s.createGrouped(ctx, runs, store.ClaimParams{})
	return err
}

// StartRuns implements store.Starter. It is CreateRuns in the same round
// trip: the statement that writes the tasks decides which roots start,
// from the tenants' block pointers and the frontier, and writes those
// RUNNING with their QUEUED and STARTED events and their leases; Enqueue
// checks the statuses of the candidates, and a last query reads which of
// them started.
func (s *Store) StartRuns(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	return s.createGrouped(ctx, runs, p)
}

// createGrouped is createRuns, in a transaction with the calls made at the
// same time when the call may share one (see groupcommit.Group).
func (s *Store) createGrouped(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	if !groupcommit.Groupable(runs, p) {
		return s.createRuns(ctx, runs, p)
	}
	return s.creates.Do(ctx, runs, p, s.createRuns)
}

// prepare checks new runs and returns their graphs and the parameters
// that insert them.
func (s *Store) prepare(runs []store.NewRun) ([]*graph, dbsqlc.InsertRunsParams, error) {
	graphs := make([]*graph, len(runs))
	seen := make(map[dag.RunID]bool, len(runs))
	shared := make(map[taskList]*graph, 1)
	var rp dbsqlc.InsertRunsParams
	for i := range runs {
		nr := &runs[i]
		g, err := validate(nr, shared)
		if err != nil {
			return nil, rp, err
		}
		if seen[nr.ID] {
			return nil, rp, fmt.Errorf("create run %s: %w (twice in one batch)", nr.ID, store.ErrRunExists)
		}
		seen[nr.ID] = true
		graphs[i] = g
	}
	return graphs, s.insertRunsParams(runs, graphs), nil
}

// insertRunsParams returns the parameters that insert runs, whose graphs
// validate returned.
func (s *Store) insertRunsParams(runs []store.NewRun, graphs []*graph) dbsqlc.InsertRunsParams {
	var rp dbsqlc.InsertRunsParams
	rp.Now = s.clock()
	for i := range runs {
		nr := &runs[i]
		rp.Ids = append(rp.Ids, uuidOf(nr.ID))
		rp.Workflows = append(rp.Workflows, nr.Workflow)
		rp.Fingerprints = append(rp.Fingerprints, nr.Fingerprint)
		rp.Tenants = append(rp.Tenants, nr.Tenant)
		rp.Inputs = append(rp.Inputs, nr.Input)
		rp.Pendings = append(rp.Pendings, int32(graphs[i].counted))
		rp.Statuses = append(rp.Statuses, string(store.RunRunning))
		rp.Capped = append(rp.Capped, nr.Concurrency > 0)
		rp.Slots = append(rp.Slots, nr.ConcurrencyKey)
		rp.TimeoutMs = append(rp.TimeoutMs, nr.Timeout.Milliseconds())
		rp.TraceParents = append(rp.TraceParents, nr.TraceParent)
		rp.Priorities = append(rp.Priorities, int16(nr.Priority))
	}
	return rp
}

// createRuns creates runs, starts up to p.Limit of their roots for p.Worker
// as store.Starter says, and enqueues the others. A creation refused
// because no range of the history tables holds an id is made again once
// they have one (maintenance.Partitions.WithRanges).
func (s *Store) createRuns(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	if err := s.ensureBuckets(ctx, runs); err != nil {
		return nil, createError(len(runs), err)
	}
	var claimed []store.ClaimedTask
	err := s.parts.WithRanges(ctx, runs, func() (err error) {
		claimed, err = s.createRunsOnce(ctx, runs, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// createRunsOnce is createRuns's one attempt. Runs with idempotency keys
// or concurrency caps take the transaction's path (createInTx).
func (s *Store) createRunsOnce(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	graphs, rp, err := s.prepare(runs)
	if err != nil {
		return nil, err
	}
	inTx, timeouts := false, false
	for i := range runs {
		inTx = inTx || runs[i].Key != "" || runs[i].Concurrency > 0
		timeouts = timeouts || runs[i].Timeout > 0
	}
	if inTx {
		return s.createInTx(ctx, runs, graphs, rp, p)
	}
	c := s.newCreation(runs, graphs, nil, rp.Now, p)
	c.trigger = true
	// One round trip: the statements go in one pipeline, which runs them
	// in one implicit transaction. A queued statement returns no error: its
	// error comes from the send, which StartedTasks makes when there are
	// candidates to start.
	pl := pipeline.New(s.pool)
	_ = s.q.InsertRuns(ctx, pl.Queue(), rp)
	if timeouts {
		_ = s.q.InsertDeadlines(ctx, pl.Queue(), rp.Ids)
	}
	started, err := c.write(ctx, s, pl)
	if err != nil {
		return nil, createError(len(runs), err)
	}
	s.noteQueued(ctx, len(c.tp.Names))
	return c.claimed(s, started), nil
}

// createInTx creates runs some of which have idempotency keys or
// concurrency caps, in one transaction. The slots of capped runs are
// locked first, and each capped run is admitted (RUNNING) when its slot
// has room and no run waits for it, or else created QUEUED with its roots
// PENDING. Then the runs are inserted, those whose keys are taken left out
// (and given the ids of the runs that have them, and their slots back),
// then the tasks of the others; last, a slot that has room and waiting
// runs (its cap was raised, or a duplicate gave its room back) admits them.
func (s *Store) createInTx(ctx context.Context, runs []store.NewRun, graphs []*graph, rp dbsqlc.InsertRunsParams, p store.ClaimParams) ([]store.ClaimedTask, error) {
	var claimed []store.ClaimedTask
	queued := 0
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		var wrote bool
		var err error
		claimed, queued, wrote, err = s.createWithin(ctx, tx, runs, graphs, rp, p, true)
		if err == nil && !wrote {
			return errNothingToDo // every run was a duplicate
		}
		return err
	})
	if err != nil && !errors.Is(err, errNothingToDo) {
		return nil, createError(len(runs), err)
	}
	s.noteQueued(ctx, queued)
	return claimed, nil
}

// createWithin is createInTx's work in the caller's transaction: tx is
// createInTx's own, or, for CreateRunsTx, one that the store's caller
// began and ends (with p zero: nothing starts before it commits). It
// returns the tasks it started, how many it queued, and whether it wrote
// anything (false when every run was a duplicate). trigger says that a
// caller waits for it (see creation.trigger).
func (s *Store) createWithin(ctx context.Context, tx *pipeline.Tx, runs []store.NewRun, graphs []*graph, rp dbsqlc.InsertRunsParams, p store.ClaimParams, trigger bool) (claimed []store.ClaimedTask, queued int, wrote bool, err error) {
	keyed := false
	for i := range runs {
		keyed = keyed || runs[i].Key != ""
	}
	ls, held, err := s.capNewRuns(ctx, tx, runs, rp.Statuses)
	if err != nil {
		return nil, 0, false, err
	}
	var inserted map[dag.RunID]bool
	if keyed {
		if inserted, err = s.insertKeyedRuns(ctx, tx, runs, rp); err != nil {
			return nil, 0, false, err
		}
	} else {
		_ = s.q.InsertRuns(ctx, tx.Queue(), rp)
	}
	var created []store.NewRun
	var createdGraphs []*graph
	var createdHeld []bool
	var qp dbsqlc.QueueRunsParams
	for i := range runs {
		if inserted != nil && !inserted[runs[i].ID] {
			if runs[i].Concurrency > 0 && !held[i] { // it took room it does not use
				ls[slotKey{runs[i].Workflow, runs[i].ConcurrencyKey}].taken--
			}
			continue
		}
		created = append(created, runs[i])
		createdGraphs = append(createdGraphs, graphs[i])
		createdHeld = append(createdHeld, held[i])
		if held[i] {
			qp.Workflows = append(qp.Workflows, runs[i].Workflow)
			qp.Slots = append(qp.Slots, runs[i].ConcurrencyKey)
			qp.Ids = append(qp.Ids, uuidOf(runs[i].ID))
		}
	}
	if len(qp.Ids) > 0 {
		_ = s.q.QueueRuns(ctx, tx.Queue(), qp)
	}
	if len(created) > 0 {
		var timed []pgtype.UUID
		for i := range created {
			if created[i].Timeout > 0 {
				timed = append(timed, uuidOf(created[i].ID))
			}
		}
		if len(timed) > 0 {
			_ = s.q.InsertDeadlines(ctx, tx.Queue(), timed)
		}
		c := s.newCreation(created, createdGraphs, createdHeld, rp.Now, p)
		c.trigger = trigger
		started, err := c.write(ctx, s, &tx.Pipeline)
		if err != nil {
			return nil, 0, false, err
		}
		claimed, queued = c.claimed(s, started), len(c.tp.Names)
	}
	if len(ls) > 0 {
		ready, err := ls.settle(ctx, s, tx, rp.Now)
		if err != nil {
			return nil, 0, false, err
		}
		queued += len(ready)
		if err := s.enqueueReady(ctx, tx.Queue(), ready); err != nil {
			return nil, 0, false, err
		}
	}
	return claimed, queued, len(created) > 0 || len(ls) > 0, nil
}

// capNewRuns locks the slots of the capped runs among runs and decides
// which are admitted at once, in id order: those whose slot has room and
// no run waiting. The others are QUEUED (statuses, by run) and held: their
// roots stay PENDING. The slots' counts are written by settle.
func (s *Store) capNewRuns(ctx context.Context, tx *pipeline.Tx, runs []store.NewRun, statuses []string) (lockedSlots, []bool, error) {
	held := make([]bool, len(runs))
	var order []int
	for i := range runs {
		if runs[i].Concurrency > 0 {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return nil, held, nil
	}
	ls, err := s.lockNewSlots(ctx, tx, runs)
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(order, func(a, b int) int { return compareIDs(runs[a].ID, runs[b].ID) })
	for _, i := range order {
		st := ls[slotKey{runs[i].Workflow, runs[i].ConcurrencyKey}]
		if !st.waiting && st.running+st.taken < st.lim {
			st.taken++
			continue
		}
		st.waiting = true
		held[i] = true
		statuses[i] = string(store.RunQueued)
	}
	return ls, held, nil
}

// insertKeyedRuns inserts runs some of which have idempotency keys, and
// returns those inserted: a run whose key is taken is not, and gets the id
// of the run that has it (NewRun.Existing).
func (s *Store) insertKeyedRuns(ctx context.Context, tx *pipeline.Tx, runs []store.NewRun, rp dbsqlc.InsertRunsParams) (map[dag.RunID]bool, error) {
	kp := dbsqlc.InsertKeyedRunsParams{
		Now: rp.Now, Ids: rp.Ids, Workflows: rp.Workflows, Fingerprints: rp.Fingerprints,
		Tenants: rp.Tenants, Inputs: rp.Inputs, Pendings: rp.Pendings,
		Statuses: rp.Statuses, Capped: rp.Capped, Slots: rp.Slots, TimeoutMs: rp.TimeoutMs,
		TraceParents: rp.TraceParents, Priorities: rp.Priorities,
	}
	for i := range runs {
		kp.Keys = append(kp.Keys, runs[i].Key)
	}
	ids, err := s.q.InsertKeyedRuns(ctx, tx.Queue(), kp)
	if err != nil {
		return nil, err
	}
	inserted := make(map[dag.RunID]bool, len(ids))
	for _, id := range ids {
		inserted[dag.RunID(id.Bytes)] = true
	}
	var kq dbsqlc.RunsByKeyParams
	for i := range runs {
		if !inserted[runs[i].ID] {
			kq.Workflows = append(kq.Workflows, runs[i].Workflow)
			kq.Tenants = append(kq.Tenants, runs[i].Tenant)
			kq.Keys = append(kq.Keys, runs[i].Key)
		}
	}
	if len(kq.Keys) == 0 {
		return inserted, nil
	}
	rows, err := s.q.RunsByKey(ctx, tx.Queue(), kq)
	if err != nil {
		return nil, fmt.Errorf("read the runs that have the keys: %w", err)
	}
	holder := make(map[[3]string]dag.RunID, len(rows))
	for _, r := range rows {
		holder[[3]string{r.Workflow, r.Tenant, r.Key}] = dag.RunID(r.ID.Bytes)
	}
	for i := range runs {
		if !inserted[runs[i].ID] {
			runs[i].Existing = holder[[3]string{runs[i].Workflow, runs[i].Tenant, runs[i].Key}]
			if runs[i].Existing.IsZero() {
				return nil, fmt.Errorf("run %s: key %q is taken, but no run has it", runs[i].ID, runs[i].Key)
			}
		}
	}
	return inserted, nil
}

// createError turns the error of a creation into one callers branch on.
func createError(n int, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && strings.HasPrefix(pgErr.TableName, "dagen_runs"):
		return fmt.Errorf("create run %s: %w", keyValue(pgErr.Detail), store.ErrRunExists)
	case errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.TableName == "dagen_tenant_groups":
		return fmt.Errorf("create %d runs: add tenants: more than %d tenants: %w", n, store.BlockLength, err)
	}
	return fmt.Errorf("create %d runs: %w", n, err)
}

// creation is the statements that write new runs' tasks and queue their
// roots, or start some of them (store.Starter).
type creation struct {
	tp      dbsqlc.InsertTasksParams
	ep      dbsqlc.EnqueueParams
	tenants []string
	// Candidates to start: each tenant's first root.
	cands     []store.ClaimedTask
	candRuns  []pgtype.UUID
	candNames []string
	// priorities is set when a run has a priority, rated when a step has
	// a rate limit: the schema is marked as having them (MarkFlow) before
	// the enqueue.
	priorities, rated bool
	// trigger is set for a caller's creation (a trigger, in its own
	// transaction or the caller's), which enqueues by EnqueuePlain when no
	// step has a rate limit: its planning is on the caller's path. The
	// engine's own (a completion's child runs, a schedule's) keep Enqueue.
	trigger bool
}

// newCreation writes the tasks of runs; the roots of held runs (QUEUED for
// their caps; held may be nil) stay PENDING.
func (s *Store) newCreation(runs []store.NewRun, graphs []*graph, held []bool, now pgtype.Timestamptz, p store.ClaimParams) *creation {
	c := &creation{}
	c.tp.Now = now
	c.tp.Worker, c.tp.LeaseSeconds = p.Worker, p.Lease.Seconds()
	candidate := map[string]bool{} // by tenant
	serves := p.Serving()
	for i := range runs {
		nr, g := &runs[i], graphs[i]
		id := uuidOf(nr.ID)
		c.tenants = append(c.tenants, nr.Tenant)
		for ti, t := range nr.Tasks {
			claim := serves(t.Signature)
			status := store.TaskPending
			switch {
			case len(t.Parents) > 0 || t.Kind == store.KindOnFailure || held != nil && held[i]:
			case claim && len(c.cands) < p.Limit && !candidate[nr.Tenant] && t.RateLimit == "":
				// InsertTasks starts it (RUNNING), or queues it when the
				// tenant has work queued, and Enqueue then enqueues it.
				status = taskStarting
				candidate[nr.Tenant] = true
				c.cands = append(c.cands, store.ClaimedTask{
					RunID: nr.ID, Workflow: nr.Workflow, Tenant: nr.Tenant,
					Step: t.Name, Kind: t.Kind, Attempt: 1, Signature: t.Signature, Input: nr.Input,
					TraceParent: nr.TraceParent,
				})
				c.candRuns = append(c.candRuns, id)
				c.candNames = append(c.candNames, t.Name)
			default:
				status = store.TaskQueued // InsertTasks keeps its QUEUED event
			}
			if status != store.TaskPending {
				c.ep.RunIds = append(c.ep.RunIds, id)
				c.ep.Tasks = append(c.ep.Tasks, t.Name)
				c.ep.Signatures = append(c.ep.Signatures, t.Signature)
				c.ep.Tenants = append(c.ep.Tenants, nr.Tenant)
				c.ep.IfQueued = append(c.ep.IfQueued, status == taskStarting)
			}
			tp := &c.tp
			tp.RunIds = append(tp.RunIds, id)
			tp.Names = append(tp.Names, t.Name)
			tp.Seqs = append(tp.Seqs, int32(ti))
			tp.Kinds = append(tp.Kinds, string(t.Kind))
			tp.Parents = append(tp.Parents, g.parentLits[ti])
			tp.Children = append(tp.Children, g.childLits[ti])
			tp.PendingParents = append(tp.PendingParents, int32(len(t.Parents)))
			tp.Statuses = append(tp.Statuses, string(status))
			tp.MaxAttempts = append(tp.MaxAttempts, int32(max(t.MaxAttempts, 1)))
			tp.Signatures = append(tp.Signatures, t.Signature)
			tp.Tenants = append(tp.Tenants, nr.Tenant)
			tp.Priorities = append(tp.Priorities, int16(nr.Priority))
			tp.RateLimits = append(tp.RateLimits, t.RateLimit)
			tp.RateKeys = append(tp.RateKeys, t.RateKey)
			tp.RateUnits = append(tp.RateUnits, int32(max(t.RateUnits, 1)))
			c.rated = c.rated || t.RateLimit != ""
		}
		c.priorities = c.priorities || nr.Priority > 0
	}
	slices.Sort(c.tenants)
	c.tenants = slices.Compact(c.tenants)
	return c
}

// write queues the statements on pl, after the runs' insert, and sends
// them: it returns the candidates that started.
func (c *creation) write(ctx context.Context, s *Store, pl *pipeline.Pipeline) ([]dbsqlc.StartedTasksRow, error) {
	db := pl.Queue()
	if c.priorities || c.rated {
		_ = s.q.MarkFlow(ctx, db, c.priorities, c.rated) // before the enqueue, which reads it
		s.flow.Store(true)                               // this store claims by the flow's statement from now on
	}
	_ = s.q.InsertTasks(ctx, db, c.tp)
	_ = s.q.EnsureTenants(ctx, db, c.tenants) // later enqueues need the tenants' rows, even when nothing is enqueued now
	if len(c.ep.Tasks) > 0 {
		if c.rated || !c.trigger {
			_ = s.enqueue(ctx, db, c.ep)
		} else {
			// The runs' steps say every rate limit of the tasks enqueued:
			// none, so the statement without the limits' buckets does
			// what Enqueue would (see EnqueuePlain).
			_ = s.enqueuePlain(ctx, db, c.ep)
		}
	}
	var started []dbsqlc.StartedTasksRow
	var err error
	if len(c.cands) > 0 {
		started, err = s.q.StartedTasks(ctx, db, c.candRuns, c.candNames)
	} else {
		err = pl.Send(ctx)
	}
	if err != nil {
		return nil, err
	}
	return started, nil
}

// claimed returns the candidates that started, and records them in the
// store's lease book under their lease, whose id is the least of their
// STARTED event ids (InsertTasks). It is called before the creation
// commits: a creation that fails leaves its attempts in the book, where
// nothing answers them, or where the attempt of a creation tried again
// takes their place (leasebook.Book.Claimed).
func (c *creation) claimed(s *Store, started []dbsqlc.StartedTasksRow) []store.ClaimedTask {
	rowOf := make(map[taskKey]*dbsqlc.StartedTasksRow, len(started))
	var lease int64
	for i := range started {
		r := &started[i]
		rowOf[taskKey{dag.RunID(r.RunID.Bytes), r.Name}] = r
		if i == 0 || r.StartedEvent < lease {
			lease = r.StartedEvent
		}
	}
	var claimed []store.ClaimedTask
	var views []leasebook.View
	for _, c := range c.cands {
		if r := rowOf[taskKey{c.RunID, c.Step}]; r != nil {
			c.Claim = r.Claim
			claimed = append(claimed, c)
			views = append(views, leasebook.ViewOf(&c, r.Children, r.StartedEvent, r.RowCtid))
		}
	}
	s.leases.Claimed(leasebook.LeaseOf(lease, claimed), claimed, views)
	return claimed
}

// taskStarting marks, for InsertTasks, a root that StartRuns may start.
const taskStarting store.TaskStatus = "STARTING"

// keyValue returns the value in a unique violation's detail, "Key
// (id)=(value) already exists.", or the detail itself.
func keyValue(detail string) string {
	_, v, ok := strings.Cut(detail, ")=(")
	if v, _, found := strings.Cut(v, ")"); ok && found {
		return v
	}
	return detail
}

// graph is what validation derives from a new run's tasks.
type graph struct {
	children [][]string // per task, in task order
	counted  int        // tasks that count toward completion
	// The tasks' parents and children as text[] literals (InsertTasks).
	parentLits, childLits []string
}

// taskList is a run's task list by identity: its first task and its
// length. The engine gives every run of a workflow the same list.
type taskList struct {
	first *store.NewTask
	n     int
}

// validate checks that a new run has a valid tenant and that its tasks form
// a DAG the store can run: the same rules as memstore. A task list that
// runs of one call share is checked once, and its graph kept in shared.
func validate(nr *store.NewRun, shared map[taskList]*graph) (*graph, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("create run %s: %w: %s", nr.ID, store.ErrInvalidRun, fmt.Sprintf(format, args...))
	}
	if nr.ID.IsZero() {
		return nil, bad("zero run id")
	}
	if nr.Workflow == "" {
		return nil, bad("empty workflow name")
	}
	if err := store.ValidTenant(nr.Tenant); err != nil {
		return nil, fmt.Errorf("create run %s: %w: %w", nr.ID, store.ErrInvalidRun, err)
	}
	if len(nr.Tasks) == 0 {
		return nil, bad("no tasks")
	}
	list := taskList{&nr.Tasks[0], len(nr.Tasks)}
	if g := shared[list]; g != nil {
		return g, nil
	}
	g, err := graphOf(nr.Tasks, bad)
	if err != nil {
		return nil, err
	}
	shared[list] = g
	return g, nil
}

// graphOf checks that tasks form a DAG the store can run, and returns it;
// bad makes the error.
func graphOf(tasks []store.NewTask, bad func(format string, args ...any) error) (*graph, error) {
	n := len(tasks)
	g := &graph{children: make([][]string, n)}
	index := make(map[string]int, n)
	onFailure := false
	for i, t := range tasks {
		if t.Name == "" {
			return nil, bad("task %d has no name", i)
		}
		if _, dup := index[t.Name]; dup {
			return nil, bad("duplicate task %q", t.Name)
		}
		index[t.Name] = i
		switch t.Kind {
		case store.KindStep, store.KindSleep, store.KindMap, store.KindSignal, store.KindChild:
			g.counted++
		case store.KindOnFailure:
			if onFailure {
				return nil, bad("more than one onfailure task")
			}
			if len(t.Parents) > 0 {
				return nil, bad("onfailure task %q has parents", t.Name)
			}
			onFailure = true
		default:
			return nil, bad("task %q has unknown kind %q", t.Name, t.Kind)
		}
	}
	if g.counted == 0 {
		return nil, bad("no step tasks")
	}
	indeg := make([]int, n)
	childIdx := make([][]int, n)
	for i, t := range tasks {
		for k, p := range t.Parents {
			j, ok := index[p]
			if !ok || j == i || tasks[j].Kind == store.KindOnFailure || slices.Contains(t.Parents[:k], p) {
				return nil, bad("task %q has bad parent %q (unknown, itself, onfailure or repeated)", t.Name, p)
			}
			g.children[j] = append(g.children[j], t.Name)
			childIdx[j] = append(childIdx[j], i)
		}
		indeg[i] = len(t.Parents)
	}
	// Kahn's algorithm: every task must be reachable in topological order.
	var queue []int
	for i := range indeg {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, c := range childIdx[i] {
			if indeg[c]--; indeg[c] == 0 {
				queue = append(queue, c)
			}
		}
	}
	for i := range indeg {
		if indeg[i] > 0 {
			return nil, bad("tasks form a cycle through %q", tasks[i].Name)
		}
	}
	g.parentLits, g.childLits = make([]string, n), make([]string, n)
	for i, t := range tasks {
		g.parentLits[i], g.childLits[i] = arrayLiteral(t.Parents), arrayLiteral(g.children[i])
	}
	return g, nil
}

// arrayLiteral encodes names as a Postgres text[] literal.
func arrayLiteral(names []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, r := range n {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}
