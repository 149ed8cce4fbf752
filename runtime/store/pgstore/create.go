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
)

// CreateRuns implements store.Store. The runs, their tasks (the roots with
// their QUEUED events) and the roots' queue entries are written with one
// statement each, all sent in one round trip and run in one transaction.
func (s *Store) CreateRuns(ctx context.Context, runs []store.NewRun) error {
	_, err := s.createRuns(ctx, runs, store.ClaimParams{})
	return err
}

// StartRuns implements store.Starter. It is CreateRuns in the same round
// trip: the statement that writes the tasks decides which roots start,
// from the tenants' block pointers and the frontier, and writes those
// RUNNING with their QUEUED and STARTED events and their leases; Enqueue
// checks the statuses of the candidates, and a last query reads which of
// them started.
func (s *Store) StartRuns(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	return s.createRuns(ctx, runs, p)
}

// createRuns creates runs, starts up to p.Limit of their roots for p.Worker
// as store.Starter says, and enqueues the others.
func (s *Store) createRuns(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	var (
		rp      dbsqlc.InsertRunsParams
		tp      dbsqlc.InsertTasksParams
		ep      dbsqlc.EnqueueParams
		tenants []string
		// Candidates to start: each tenant's first root.
		cands     []store.ClaimedTask
		candRuns  []pgtype.UUID
		candNames []string
		candidate = map[string]bool{} // by tenant
	)
	rp.Now = s.clock()
	tp.Now = rp.Now
	tp.Worker, tp.LeaseSeconds = p.Worker, p.Lease.Seconds()
	seen := make(map[dag.RunID]bool, len(runs))
	for i := range runs {
		nr := &runs[i]
		g, err := validate(nr)
		if err != nil {
			return nil, err
		}
		if seen[nr.ID] {
			return nil, fmt.Errorf("create run %s: %w (twice in one batch)", nr.ID, store.ErrRunExists)
		}
		seen[nr.ID] = true
		id := uuidOf(nr.ID)
		rp.Ids = append(rp.Ids, id)
		rp.Workflows = append(rp.Workflows, nr.Workflow)
		rp.Fingerprints = append(rp.Fingerprints, nr.Fingerprint)
		rp.Tenants = append(rp.Tenants, nr.Tenant)
		rp.Inputs = append(rp.Inputs, nr.Input)
		rp.Pendings = append(rp.Pendings, int32(g.counted))
		tenants = append(tenants, nr.Tenant)
		for ti, t := range nr.Tasks {
			claim := len(p.Signatures) == 0 || slices.Contains(p.Signatures, t.Signature)
			status := store.TaskPending
			switch {
			case len(t.Parents) > 0 || t.Kind == store.KindOnFailure:
			case claim && len(cands) < p.Limit && !candidate[nr.Tenant]:
				// InsertTasks starts it (RUNNING), or queues it when the
				// tenant has work queued, and Enqueue then enqueues it.
				status = taskStarting
				candidate[nr.Tenant] = true
				cands = append(cands, store.ClaimedTask{
					RunID: nr.ID, Workflow: nr.Workflow, Tenant: nr.Tenant,
					Step: t.Name, Kind: t.Kind, Attempt: 1, Signature: t.Signature, Input: nr.Input,
				})
				candRuns = append(candRuns, id)
				candNames = append(candNames, t.Name)
			default:
				status = store.TaskQueued // InsertTasks keeps its QUEUED event
			}
			if status != store.TaskPending {
				ep.RunIds = append(ep.RunIds, id)
				ep.Tasks = append(ep.Tasks, t.Name)
				ep.Signatures = append(ep.Signatures, t.Signature)
				ep.Tenants = append(ep.Tenants, nr.Tenant)
				ep.IfQueued = append(ep.IfQueued, status == taskStarting)
			}
			tp.RunIds = append(tp.RunIds, id)
			tp.Names = append(tp.Names, t.Name)
			tp.Seqs = append(tp.Seqs, int32(ti))
			tp.Kinds = append(tp.Kinds, string(t.Kind))
			tp.Parents = append(tp.Parents, arrayLiteral(t.Parents))
			tp.Children = append(tp.Children, arrayLiteral(g.children[ti]))
			tp.PendingParents = append(tp.PendingParents, int32(len(t.Parents)))
			tp.Statuses = append(tp.Statuses, string(status))
			tp.MaxAttempts = append(tp.MaxAttempts, int32(max(t.MaxAttempts, 1)))
			tp.Signatures = append(tp.Signatures, t.Signature)
			tp.Tenants = append(tp.Tenants, nr.Tenant)
		}
	}
	slices.Sort(tenants)
	tenants = slices.Compact(tenants)
	// One round trip: the statements go in one pipeline, which runs them
	// in one implicit transaction. A queued statement returns no error: its
	// error comes from the send, which StartedTasks makes when there are
	// candidates to start.
	pl := &pipeline{db: s.pool}
	_ = s.q.InsertRuns(ctx, pl, rp)
	_ = s.q.InsertTasks(ctx, pl, tp)
	_ = s.q.EnsureTenants(ctx, pl, tenants) // later enqueues need the tenants' rows, even when nothing is enqueued now
	if len(ep.Tasks) > 0 {
		_ = s.q.Enqueue(ctx, pl, ep)
	}
	var started []dbsqlc.StartedTasksRow
	var err error
	if len(cands) > 0 {
		started, err = s.q.StartedTasks(ctx, pl, candRuns, candNames)
	} else {
		err = pl.send(ctx)
	}
	if err != nil {
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "dagen_runs_pkey":
			return nil, fmt.Errorf("create run %s: %w", keyValue(pgErr.Detail), store.ErrRunExists)
		case errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.TableName == "dagen_tenant_groups":
			return nil, fmt.Errorf("create %d runs: add tenants: more than %d tenants: %w", len(runs), store.BlockLength, err)
		}
		return nil, fmt.Errorf("create %d runs: %w", len(runs), err)
	}
	s.noteQueued(ctx, len(tp.Names))
	isStarted := make(map[taskKey]bool, len(started))
	for _, r := range started {
		isStarted[taskKey{dag.RunID(r.RunID.Bytes), r.Name}] = true
	}
	var claimed []store.ClaimedTask
	for _, c := range cands {
		if isStarted[taskKey{c.RunID, c.Step}] {
			claimed = append(claimed, c)
		}
	}
	return claimed, nil
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
}

// validate checks that a new run has a valid tenant and that its tasks form
// a DAG the store can run: the same rules as memstore.
func validate(nr *store.NewRun) (*graph, error) {
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
	n := len(nr.Tasks)
	g := &graph{children: make([][]string, n)}
	index := make(map[string]int, n)
	onFailure := false
	for i, t := range nr.Tasks {
		if t.Name == "" {
			return nil, bad("task %d has no name", i)
		}
		if _, dup := index[t.Name]; dup {
			return nil, bad("duplicate task %q", t.Name)
		}
		index[t.Name] = i
		switch t.Kind {
		case store.KindStep, store.KindSleep, store.KindMap:
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
	for i, t := range nr.Tasks {
		for k, p := range t.Parents {
			j, ok := index[p]
			if !ok || j == i || nr.Tasks[j].Kind == store.KindOnFailure || slices.Contains(t.Parents[:k], p) {
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
			return nil, bad("tasks form a cycle through %q", nr.Tasks[i].Name)
		}
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
