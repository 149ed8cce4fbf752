package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/dag"
	"github.com/dagenhq/dagen/store"
	"github.com/dagenhq/dagen/store/pgstore/internal/dbsqlc"
)

// CreateRuns implements store.Store. The runs, their tasks, the roots'
// queue entries and QUEUED events are written with one statement each, in
// one transaction.
func (s *Store) CreateRuns(ctx context.Context, runs []store.NewRun) error {
	if len(runs) == 0 {
		return nil
	}
	var (
		rp      dbsqlc.InsertRunsParams
		tp      dbsqlc.InsertTasksParams
		ep      dbsqlc.EnqueueParams
		ev      events
		tenants []string
	)
	rp.Now = s.clock()
	seen := make(map[dag.RunID]bool, len(runs))
	for i := range runs {
		nr := &runs[i]
		g, err := validate(nr)
		if err != nil {
			return err
		}
		if seen[nr.ID] {
			return fmt.Errorf("create run %s: %w (twice in one batch)", nr.ID, store.ErrRunExists)
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
			status := store.TaskPending
			if len(t.Parents) == 0 && t.Kind != store.KindOnFailure {
				status = store.TaskQueued
				ep.RunIds = append(ep.RunIds, id)
				ep.Tasks = append(ep.Tasks, t.Name)
				ep.Workflows = append(ep.Workflows, nr.Workflow)
				ep.Tenants = append(ep.Tenants, nr.Tenant)
				ev.add(nr.ID, t.Name, store.EventQueued, 0, "")
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
		}
	}
	slices.Sort(tenants)
	tenants = slices.Compact(tenants)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		created, err := s.q.InsertRuns(ctx, tx, rp)
		if err != nil {
			return fmt.Errorf("insert runs: %w", err)
		}
		if len(created) < len(rp.Ids) {
			return existingRun(rp.Ids, created)
		}
		if err := s.q.InsertTasks(ctx, tx, tp); err != nil {
			return fmt.Errorf("insert tasks: %w", err)
		}
		if err := s.q.EnsureTenants(ctx, tx, tenants); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23514" { // check_violation on group_id
				return fmt.Errorf("add tenants: more than %d tenants: %w", store.BlockLength, err)
			}
			return fmt.Errorf("add tenants: %w", err)
		}
		if _, err := s.q.Enqueue(ctx, tx, ep); err != nil {
			return fmt.Errorf("enqueue roots: %w", err)
		}
		return ev.insert(ctx, s.q, tx, rp.Now)
	})
	if err != nil {
		if errors.Is(err, store.ErrRunExists) {
			return err
		}
		return fmt.Errorf("create %d runs: %w", len(runs), err)
	}
	s.noteCreated(ctx, len(tp.Names))
	return nil
}

// existingRun names the first run that was not created because it exists.
func existingRun(want, created []pgtype.UUID) error {
	got := make(map[[16]byte]bool, len(created))
	for _, id := range created {
		got[id.Bytes] = true
	}
	for _, id := range want {
		if !got[id.Bytes] {
			return fmt.Errorf("create run %s: %w", dag.RunID(id.Bytes), store.ErrRunExists)
		}
	}
	return fmt.Errorf("create runs: %w", store.ErrRunExists)
}

// graph is what validation derives from a new run's tasks.
type graph struct {
	children [][]string // per task, in task order
	counted  int        // tasks that count toward completion
}

// validate checks that a new run's tasks form a DAG the store can run: the
// same rules as memstore.
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
		case store.KindStep, store.KindSleep:
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
