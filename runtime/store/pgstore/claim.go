package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/leasebook"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// ClaimTasks implements store.Store with a single statement (see
// queries/queue.sql), sent with KeepGenericPlan (when the pool caches
// plans) in one round trip and one transaction: nothing is committed
// unless rows were claimed.
func (s *Store) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	rows, priorities, err := s.claimRows(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("claim tasks for worker %s: %w", p.Worker, err)
	}
	claimed := make([]store.ClaimedTask, len(rows))
	views := make([]leasebook.View, len(rows))
	sh := newSharedReads(len(rows), func(i int) (bool, bool) { return rows[i].RunShared, rows[i].ParentsShared })
	for i, r := range rows {
		c := store.ClaimedTask{
			RunID:        dag.RunID(r.RunID.Bytes),
			Step:         r.Name,
			Kind:         store.TaskKind(r.Kind),
			Attempt:      int(r.Attempt),
			Claim:        r.Claim,
			Signature:    r.Signature,
			Element:      int(r.Element),
			Queued:       time.Duration(r.QueuedSeconds * float64(time.Second)),
			TenantQueued: r.TenantQueued,
		}
		own := runFields{workflow: r.Workflow, tenant: r.Tenant, input: r.Input, inputOmitted: r.InputOmitted, traceParent: r.TraceParent}
		if r.FailureStep.Valid {
			own.failure = &dag.Failure{
				RunID:   c.RunID,
				Step:    r.FailureStep.String,
				Attempt: int(r.FailureAttempt.Int32),
				Message: r.FailureMessage.String,
			}
		}
		err := sh.run(&c, r.RunShared, own)
		if err == nil {
			err = sh.parents(&c, r.ParentsShared, r.ParentNames, r.ParentStatuses, r.ParentOutputs)
		}
		if err != nil {
			return nil, fmt.Errorf("claim tasks for worker %s: task %s/%s: %w", p.Worker, c.RunID, c.Step, err)
		}
		claimed[i] = c
		views[i] = leasebook.ViewOf(&c, r.Children, r.StartedEvent, r.RowCtid)
	}
	if len(rows) > 0 {
		s.leases.Claimed(leasebook.LeaseOf(rows[0].Lease, claimed), claimed, views)
	}
	s.floor.claimed(p.Signatures, rows, p.Filled(claimed), priorities)
	return claimed, nil
}

// flowReadEvery is how often at most a store whose claims find nothing
// reads the schema's flags (claimRows).
const flowReadEvery = 5 * time.Second

// claimRows runs the claim: ClaimTasks while the schema has neither run
// priorities nor rate limits, ClaimTasksFlow once it has (flow). The flow's
// statement costs every claim more (see docs/performance.md, "Flow
// control: rate limits, priorities, weights"), so a store takes it only
// once the schema's flags say so. The fair claim claims nothing once they
// are set; a store that set them knows at once (PutRateLimits, a run with
// a priority), another reads them when its claims find nothing, every
// flowReadEvery at most, and then claims with the flow's. The flags are
// never cleared.
func (s *Store) claimRows(ctx context.Context, p store.ClaimParams) (rows []dbsqlc.ClaimTasksRow, flow bool, err error) {
	params := dbsqlc.ClaimTasksParams{
		Now:             s.clock(),
		Signatures:      nonNil(p.Signatures),
		Floor:           s.floor.next(p.Signatures),
		Max:             int32(min(p.Limit, 1<<30)),
		ExtraSignatures: []string{},
		ExtraSlots:      []int32{},
		Worker:          p.Worker,
		LeaseSeconds:    p.Lease.Seconds(),
		Known:           uuidsOf(p.Known),
	}
	for sig, n := range p.Extra {
		if n > 0 {
			params.ExtraSignatures = append(params.ExtraSignatures, sig)
			params.ExtraSlots = append(params.ExtraSlots, int32(min(n, 1<<30)))
		}
	}
	if !s.flow.Load() {
		pl := pipeline.New(s.pool).Queue()
		if err := s.keepGenericPlan(ctx, pl); err != nil { // queued: it cannot fail here
			return nil, false, err
		}
		rows, err = s.q.ClaimTasks(ctx, pl, params)
		if err != nil || len(rows) > 0 {
			return rows, false, err // rows: the flags were not set
		}
		// Nothing claimed: an empty queue, or flags set by another
		// process. An idle worker finds nothing at every poll, so it reads
		// them now and then, not at each.
		now := time.Now().UnixNano()
		last := s.flowRead.Load()
		if now-last < int64(flowReadEvery) || !s.flowRead.CompareAndSwap(last, now) {
			return nil, false, nil
		}
		set, err := s.q.ReadFlowFlags(ctx, s.pool)
		if err != nil || !set {
			return nil, false, err
		}
		s.flow.Store(true)
	}
	pl := pipeline.New(s.pool).Queue()
	if err := s.keepGenericPlan(ctx, pl); err != nil {
		return nil, true, err
	}
	// Not past a floor: the rows a priority claim returns are not its
	// places, which may stay behind (see claimFloor).
	params.Floor = 0
	// Extra is not weighed here: the worker gives back what it reserved
	// for tasks that did not fit.
	flowRows, err := s.q.ClaimTasksFlow(ctx, pl, dbsqlc.ClaimTasksFlowParams{
		Now: params.Now, Signatures: params.Signatures, Floor: params.Floor, Max: params.Max,
		Worker: params.Worker, LeaseSeconds: params.LeaseSeconds, Known: params.Known,
	})
	if err != nil {
		return nil, true, err
	}
	rows = make([]dbsqlc.ClaimTasksRow, len(flowRows))
	for i, r := range flowRows {
		rows[i] = dbsqlc.ClaimTasksRow(r)
	}
	return rows, true, nil
}

// runFields are what a claimed task takes from its run's row.
type runFields struct {
	workflow, tenant string
	input            []byte
	inputOmitted     bool
	traceParent      string
	failure          *dag.Failure // what failed the run, if anything did
}

// sharedReads fills in the claimed tasks of one claim (ClaimTasks or
// ContinueTasks) whose rows leave their run's fields, or their parents'
// results, to an earlier row of the same claim: the statement reads each
// run once, and the parents of tasks of one run that have the same parents
// (a fan-out's children) once. Tasks given the same parents share one
// slice: steps read their parents and never write them.
//
// It keeps a row's run fields, or its parents, for the later rows only
// when some row of the claim shares them (newSharedReads): a claim of one
// task a run keeps nothing: a map of its runs, which no later row reads,
// was a noticeable part of a worker's allocations (see
// docs/performance.md, "Shared reads kept only when shared").
type sharedReads struct {
	sharesRuns, sharesParents bool
	runs                      map[dag.RunID]runFields
	byParents                 map[parentsKey][]store.ParentResult
}

// newSharedReads returns the sharedReads of a claim of n rows, where
// shared(i) returns row i's run_shared and parents_shared flags.
func newSharedReads(n int, shared func(i int) (run, parents bool)) sharedReads {
	var sh sharedReads
	for i := 0; i < n && !(sh.sharesRuns && sh.sharesParents); i++ {
		run, parents := shared(i)
		sh.sharesRuns = sh.sharesRuns || run
		sh.sharesParents = sh.sharesParents || parents
	}
	return sh
}

// parentsKey is a run and a task's parent names, joined by NUL (which a
// step name cannot hold).
type parentsKey struct {
	run   dag.RunID
	names string
}

// parents sets c's parents from the row's own (names, statuses, outputs)
// or, when the row says they are shared, from the earlier row that had
// them.
func (sh *sharedReads) parents(c *store.ClaimedTask, shared bool, names, statuses []string, outputs [][]byte) error {
	if len(names) == 0 {
		return nil
	}
	if shared {
		ps, ok := sh.byParents[parentsKey{c.RunID, strings.Join(names, "\x00")}]
		if !ok {
			return errors.New("its parents' results are left to an earlier row, and none had them")
		}
		c.Parents = ps
		return nil
	}
	ps, err := parentResults(names, statuses, outputs)
	if err != nil {
		return err
	}
	sh.setParents(c, names, ps)
	return nil
}

// run sets c's run fields: own or, when the row says they are shared, the
// earlier row's.
func (sh *sharedReads) run(c *store.ClaimedTask, shared bool, own runFields) error {
	if shared {
		f, ok := sh.runs[c.RunID]
		if !ok {
			return errors.New("its run's fields are left to an earlier row, and none had them")
		}
		own = f
	} else if sh.sharesRuns {
		if sh.runs == nil {
			sh.runs = make(map[dag.RunID]runFields)
		}
		sh.runs[c.RunID] = own
	}
	c.Workflow, c.Tenant, c.Input, c.InputOmitted = own.workflow, own.tenant, own.input, own.inputOmitted
	c.TraceParent = own.traceParent
	if c.Kind == store.KindOnFailure {
		c.Failure = own.failure
	}
	return nil
}

// keepParents sets c's parents, in the order of names, from the batch's
// tasks that resolved them (see batch.parentsHere), for later rows that
// share them.
func (sh *sharedReads) keepParents(c *store.ClaimedTask, names []string, here []*taskState) error {
	ps := make([]store.ParentResult, len(names))
	for i, name := range names {
		j := slices.IndexFunc(here, func(t *taskState) bool { return t.key.name == name })
		if j < 0 {
			return fmt.Errorf("parent %s did not resolve in this batch", name)
		}
		ps[i] = store.ParentResult{Step: name, Status: here[j].Status, Output: here[j].Output}
	}
	sh.setParents(c, names, ps)
	return nil
}

// setParents sets c's parents to ps and, but for an element (whose parents
// hold its own element), keeps them for later rows that share them.
func (sh *sharedReads) setParents(c *store.ClaimedTask, names []string, ps []store.ParentResult) {
	c.Parents = ps
	if c.Kind == store.KindElement || !sh.sharesParents {
		return
	}
	if sh.byParents == nil {
		sh.byParents = make(map[parentsKey][]store.ParentResult)
	}
	sh.byParents[parentsKey{c.RunID, strings.Join(names, "\x00")}] = ps
}

// nonNil returns s, or an empty slice for nil: pgx sends a nil slice as
// NULL, and the claim query reads an empty array as "any signature".
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// claimFloor is where a store's claims begin reading the queue: the first
// block of its last full claim. A claim deletes the rows it takes, and
// their index entries stay, dead, until the queue is vacuumed: behind a
// backlog, every claim that read the queue from its start passed over all
// the entries the claims before it had deleted (see docs/performance.md,
// "Claims begin where the last full claim began").
//
// No row a claim may take lies below the floor but for stragglers: every
// enqueue places its rows at the frontier's block or past it (Enqueue),
// the frontier is at or past the block of every row claimed, and the
// floor is the start of such a block. Stragglers are rows that another
// claim had locked and then gave back (its transaction failed): a claim
// that takes fewer rows than it asked for, and every floorResetEvery-th
// claim, reads the queue from its start, so a straggler waits a few
// claims at most. A floor holds for the signatures of the claim that set
// it (rows of others may wait below it), and a priority claim
// (ClaimTasksFlow) sets none (see claimed).
type claimFloor struct {
	mu     sync.Mutex
	at     int64
	of     []string // the signatures of the claim that set at
	claims int64
}

// floorResetEvery is how often a claim reads the queue from its start
// whatever the floor.
const floorResetEvery = 16

// next returns the floor for the next claim of the given signatures: rows
// of other signatures than those of the claim that set it may wait below
// it.
func (f *claimFloor) next(signatures []string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims++
	if f.claims%floorResetEvery == 0 || !slices.Equal(signatures, f.of) {
		return 0
	}
	return f.at
}

// claimed moves the floor after a claim of the given signatures: to the
// start of the block of its first row when it took all it asked for
// (full), back to the queue's start when it did not (the queue past the
// floor may be drained, and stragglers may wait below it) or when it was
// ClaimTasksFlow's (priorities): the rows that claim returns may be
// entries it preferred to its places, further back, whose places stay.
func (f *claimFloor) claimed(signatures []string, rows []dbsqlc.ClaimTasksRow, full, priorities bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(signatures, f.of) {
		f.of = slices.Clone(signatures) // the caller's slice may change
	}
	if !full || priorities {
		f.at = 0
		return
	}
	// ClaimTasks returns its rows in queue order: the first is the least.
	f.at = rows[0].QueueID / store.BlockLength * store.BlockLength
}
