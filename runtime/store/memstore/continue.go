package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

// continuation is a CompleteAndContinue under way: the children its
// results made ready wait in ready, QUEUED but not in the queue, until
// the call has applied every result.
type continuation struct {
	p     store.ClaimParams
	mayGo map[string]bool // by tenant, as the queue stood when the call began
	ready []readyChild
	// admitted are the ready steps of the capped runs admitted into the
	// room the batch's runs gave back: started after the children.
	admitted []readyChild
}

type readyChild struct {
	run  *run
	task int
}

// CompleteAndContinue implements store.Continuer.
func (s *Store) CompleteAndContinue(ctx context.Context, results []store.TaskResult, p store.ClaimParams) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	if p.Limit <= 0 {
		return s.completeTasks(ctx, results, nil)
	}
	return s.completeTasks(ctx, results, &p)
}

// completeTasks is CompleteTasks, and CompleteAndContinue with claim p when
// p is set.
func (s *Store) completeTasks(ctx context.Context, results []store.TaskResult, p *store.ClaimParams) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	out := make([]store.CompletionOutcome, len(results))
	s.lock()
	defer s.unlock()
	now := s.now()
	if p != nil {
		s.cont = &continuation{p: *p, mayGo: s.tenantsMayGo(results)}
	}
	b := s.newBatch(now, len(results))
	for i := range results {
		out[i] = b.apply(i, &results[i])
	}
	b.settle()
	for i := range out {
		out[i].Enqueued = b.credit[i]
		out[i].TimerDue = b.due
	}
	c := s.cont
	s.cont = nil
	defer s.returnRuns(results, out)
	if c == nil {
		return out, nil, nil
	}
	var claimed []store.ClaimedTask
	serves := p.Serving()
	for _, rc := range slices.Concat(c.ready, c.admitted) {
		r, t := rc.run, rc.run.tasks[rc.task]
		if t.Status != store.TaskQueued {
			continue // its run failed or was cancelled after it became ready
		}
		if len(claimed) < p.Limit && r.Status == store.RunRunning &&
			serves(r.spec(rc.task).Signature) && c.mayGo[r.rec.Tenant] && !rated(r, rc.task) {
			claimed = append(claimed, s.claim(r, rc.task, *p, now))
			continue
		}
		s.push(r, rc.task)
	}
	return out, claimed, nil
}

// returnRuns sets the Finished of the outcomes of results with ReturnRun
// that finished their runs.
func (s *Store) returnRuns(results []store.TaskResult, out []store.CompletionOutcome) {
	for i := range results {
		if !results[i].ReturnsRun(out[i]) {
			continue
		}
		if r := s.runs[results[i].RunID]; r != nil {
			out[i].Finished = &store.FinishedRun{Run: r.record(), Tasks: r.storeTasks()}
		}
	}
}

// tenantsMayGo returns, for the tenants of the results' runs, whether
// each may have its ready steps skip the queue as it stands: when the
// tenant has nothing queued past the head block, or else when the head
// blocks (the frontier's and the next) hold no other tenant's task. The
// queue is read only when a tenant has a backlog.
func (s *Store) tenantsMayGo(results []store.TaskResult) map[string]bool {
	may := make(map[string]bool)
	var backlog []string
	see := func(tenant string) {
		if g := s.groups[tenant]; g == nil || g.ptr <= s.frontier+1 {
			may[tenant] = true
		} else if _, seen := may[tenant]; !seen {
			may[tenant] = false
			backlog = append(backlog, tenant)
		}
	}
	for i := range results {
		r := s.runs[results[i].RunID]
		if r == nil {
			continue
		}
		see(r.rec.Tenant)
		// The runs the batch may admit, into the room r gives back.
		if r.slot != nil {
			for _, q := range r.slot.queue {
				see(q.rec.Tenant)
			}
		}
	}
	if len(backlog) == 0 {
		return may
	}
	lo, hi := s.frontier*store.BlockLength, (s.frontier+2)*store.BlockLength
	head := map[int64]bool{} // the groups with a task in the head blocks
	for _, q := range s.queues {
		for _, e := range *q {
			if e.id >= lo && e.id < hi && e.live() {
				head[e.id%store.BlockLength] = true
			}
		}
	}
	for _, tenant := range backlog {
		alone := true
		for id := range head {
			alone = alone && id == s.groups[tenant].id
		}
		may[tenant] = alone
	}
	return may
}

// queueReady enqueues a step made ready (a child its parents made ready,
// or with admitted a ready step of a run an admission let in), or, in a
// CompleteAndContinue, marks it QUEUED and leaves it to the continuation.
func (s *Store) queueReady(r *run, ti int, now time.Time, admitted bool) {
	if s.cont == nil {
		s.enqueue(r, ti, now)
		return
	}
	s.markQueued(r, ti, now)
	if admitted {
		s.cont.admitted = append(s.cont.admitted, readyChild{r, ti})
	} else {
		s.cont.ready = append(s.cont.ready, readyChild{r, ti})
	}
}

// rated reports whether task ti of r waits for a rate limit's tokens
// before it starts: it is never continued.
func rated(r *run, ti int) bool {
	_, _, ok := r.rateOf(ti)
	return ok
}
