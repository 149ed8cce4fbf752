package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/leasebook"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// CompleteAndContinue implements store.Continuer: CompleteTasks's
// transaction, in which the children that become ready and may skip the
// queue are started for p.Worker (ContinueTasks) instead of enqueued. It
// costs no round trip more when nothing is started, and one when some
// are; each started step saves the queue's insert and delete, and its
// claim.
//
// A started child's row is written twice, counted down to QUEUED
// (DecrementChildren) and then started. One statement that counts down
// and starts in the same row update was measured and kept out: its
// planning and executor work (the fair-queue check, ranking, event ids in
// order, the lease) cost more than the row version it saved, in batches
// that start children and in those that start none (see
// docs/performance.md, "Continued children: counted down, then started").
func (s *Store) CompleteAndContinue(ctx context.Context, results []store.TaskResult, p store.ClaimParams) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	if p.Limit <= 0 {
		out, err := s.CompleteTasks(ctx, results)
		return out, nil, err
	}
	cont := &continuation{p: p}
	out, err := s.completeTasks(ctx, results, cont)
	if err != nil {
		return nil, nil, err
	}
	return out, cont.claimed, nil
}

// continuation is what CompleteAndContinue asks of a batch, and the steps
// the batch started for it.
type continuation struct {
	p       store.ClaimParams
	ahead   []string        // the tenants TenantsAhead was sent for, or nil
	mayGo   map[string]bool // by tenant, as TenantsAhead read (readAhead); nil before
	claimed []store.ClaimedTask
	views   []leasebook.View // of claimed, by task
	lease   int64            // the lease of the steps started (ContinueTasks)
}

// sendAhead sends TenantsAhead with the next query (DecrementChildren), for
// the tenants of the runs whose children that query may make ready.
func (b *batch) sendAhead(ctx context.Context, ids []pgtype.UUID) {
	c := b.cont
	if c == nil {
		return
	}
	var tenants []string
	for _, id := range ids {
		tenants = append(tenants, b.runs[dag.RunID(id.Bytes)].tenant)
	}
	slices.Sort(tenants)
	c.ahead = slices.Compact(tenants)
	b.tx.QueryAhead(pipeline.Record(func(db dbsqlc.DBTX) error {
		_, err := b.s.q.TenantsAhead(ctx, db, c.ahead)
		return err
	}))
}

// readAhead reads the rows of TenantsAhead, sent with DecrementChildren:
// right after it, so that no other query discards them.
func (b *batch) readAhead(ctx context.Context) error {
	c := b.cont
	if c == nil || c.ahead == nil {
		return nil
	}
	rows, err := b.s.q.TenantsAhead(ctx, b.tx.Queue(), c.ahead)
	if err != nil {
		return fmt.Errorf("read the fair queue's tenants: %w", err)
	}
	c.mayGo = make(map[string]bool, len(rows))
	for _, r := range rows {
		c.mayGo[r.Tenant] = r.MayGo
	}
	return nil
}

// continueReady starts, for the continuation, the children DecrementChildren
// made ready that it may take (see store.Continuer), and marks them so that
// flush does not enqueue them.
func (b *batch) continueReady(ctx context.Context) error {
	c := b.cont
	if c == nil || c.mayGo == nil {
		return nil
	}
	var cands []int
	serves := c.p.Serving()
	for i, e := range b.enqueue {
		if e.child && e.live() && serves(e.signature) && c.mayGo[e.run.tenant] {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	// In the order of the results that made them ready, then the admitted
	// runs' steps (no source), in the order of their admission.
	order := func(i int) int {
		if src := b.enqueue[i].src; src >= 0 {
			return src
		}
		return len(b.credit)
	}
	slices.SortStableFunc(cands, func(x, y int) int { return cmp.Compare(order(x), order(y)) })
	cands = cands[:min(len(cands), c.p.Limit)]
	parents := b.parentsHere(cands)
	n := len(cands)
	p := dbsqlc.ContinueTasksParams{
		RunIds: make([]pgtype.UUID, 0, n), Names: make([]string, 0, n), Ctids: make([]pgtype.TID, 0, n),
		OwnParents: make([]bool, 0, n), OwnInputs: make([]bool, 0, n),
	}
	for _, i := range cands {
		e := b.enqueue[i]
		p.RunIds = append(p.RunIds, uuidOf(e.run.ID))
		p.Names = append(p.Names, e.name)
		p.Ctids = append(p.Ctids, e.ctid)
		_, own := parents[taskKey{e.run.ID, e.name}]
		p.OwnParents = append(p.OwnParents, own)
		p.OwnInputs = append(p.OwnInputs, e.run.input != nil)
	}
	p.Known, p.Now, p.Worker, p.LeaseSeconds = uuidsOf(c.p.Known), tstz(b.now), c.p.Worker, c.p.Lease.Seconds()
	started, err := b.s.q.ContinueTasks(ctx, b.tx.Queue(), p)
	if err != nil {
		return fmt.Errorf("start %d tasks made ready: %w", len(cands), err)
	}
	if len(started) > 0 {
		c.lease = started[0].Lease // every row has the claim's one lease
	}
	sh := newSharedReads(len(started), func(i int) (bool, bool) { return started[i].RunShared, started[i].ParentsShared })
	for _, r := range started {
		if r.Ord < 1 || int(r.Ord) > len(cands) {
			return fmt.Errorf("start task %s/%s: key %d of %d", dag.RunID(r.RunID.Bytes), r.Name, r.Ord, len(cands))
		}
		e := b.enqueue[cands[r.Ord-1]]
		t := store.ClaimedTask{
			RunID: e.run.ID, Step: r.Name, Kind: store.TaskKind(r.Kind),
			Attempt: int(r.Attempt), Claim: r.Claim, Signature: r.Signature, Element: int(r.Element),
		}
		own := runFields{workflow: e.run.workflow, tenant: e.run.tenant, input: r.Input, inputOmitted: r.InputOmitted, traceParent: e.run.traceParent}
		if e.run.input != nil {
			own.input, own.inputOmitted = e.run.input, false
		}
		here, fromBatch := parents[taskKey{e.run.ID, e.name}]
		err := sh.run(&t, r.RunShared, own)
		switch {
		case err != nil:
		case fromBatch && !r.ParentsShared:
			err = sh.keepParents(&t, r.ParentNames, here)
		default:
			err = sh.parents(&t, r.ParentsShared, r.ParentNames, r.ParentStatuses, r.ParentOutputs)
		}
		if err != nil {
			return fmt.Errorf("start task %s/%s: %w", t.RunID, t.Step, err)
		}
		b.enqueue[cands[r.Ord-1]].continued = true
		c.claimed = append(c.claimed, t)
		c.views = append(c.views, leasebook.ViewOf(&t, r.Children, r.StartedEvent, r.RowCtid))
	}
	return nil
}

// parentsHere returns, for the candidates whose parents all resolved in
// this batch (DecrementChildren counted every one of them down here), each
// with the output it completed with (not one the row kept), those parents:
// ContinueTasks need not read them.
func (b *batch) parentsHere(cands []int) map[taskKey][]*taskState {
	var want map[taskKey][]*taskState
	for _, i := range cands {
		if e := b.enqueue[i]; e.parentsHere {
			if want == nil {
				want = make(map[taskKey][]*taskState)
			}
			want[taskKey{e.run.ID, e.name}] = nil
		}
	}
	if want == nil {
		return nil
	}
	for _, rt := range b.resolved {
		for _, c := range rt.t.children {
			k := taskKey{rt.t.key.run, c}
			if ps, ok := want[k]; ok {
				want[k] = append(ps, rt.t)
			}
		}
	}
	for k, ps := range want {
		for _, p := range ps {
			if !p.OwnOutput {
				delete(want, k)
				break
			}
		}
	}
	return want
}

// parentResults pairs a claimed task's parents with their statuses and
// outputs, as ClaimTasks and ContinueTasks return them.
func parentResults(names, statuses []string, outputs [][]byte) ([]store.ParentResult, error) {
	n := len(names)
	if n == 0 {
		return nil, nil
	}
	if len(statuses) != n || len(outputs) != n {
		return nil, fmt.Errorf("%d parents, found %d", n, len(statuses))
	}
	parents := make([]store.ParentResult, n)
	for j := range n {
		parents[j] = store.ParentResult{Step: names[j], Status: store.TaskStatus(statuses[j]), Output: outputs[j]}
	}
	return parents, nil
}
