package groupcommit

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// A Group makes concurrent CreateRuns and StartRuns calls share
// transactions (group commit). A call made while nothing is being written
// is written at once, by its own goroutine, as it would be without the
// group. A call made while a write is under way joins a queue; when the
// write ends, a goroutine writes the queued calls in one transaction, then
// the calls queued meanwhile in the next, until none is left.
//
// Each transaction that enqueues a tenant's tasks locks the tenant's row
// of the fair queue until it commits (see queries/queue.sql, Enqueue),
// flush included.
// Goroutines of one service, each triggering runs of one tenant, queued on
// that lock, and most of each trigger's CPU (the process's and
// Postgres's) went to handing the lock on. Sharing transactions, they
// make many times as many triggers for a fraction of the CPU each (see
// docs/performance.md, "Group commit of concurrent creations").
//
// A call keeps what it would have alone:
//   - its runs are all created or none: when a batch of several calls
//     fails, each call is written again by itself, so a call fails only for
//     its own runs;
//   - its context: a call whose context ends while it waits in the queue
//     leaves it and creates nothing. One whose context ends while its batch
//     is being written waits for the batch's answer, which it returns: a
//     StartRuns call must learn of the roots started for its worker, or
//     they would stay RUNNING with nobody to run them. The batch's own
//     context ends when every call in it has given up, so that wait is
//     short.
type Group struct {
	mu      sync.Mutex
	waiting []*createCall
	busy    bool // a write is under way: new calls queue
}

// createCall is one CreateRuns or StartRuns call in the group.
type createCall struct {
	ctx     context.Context
	runs    []store.NewRun
	p       store.ClaimParams // StartRuns's; zero for CreateRuns
	done    chan struct{}     // closed once claimed and err are set
	claimed []store.ClaimedTask
	err     error
}

// A CreateFunc creates runs and starts up to p.Limit of their roots, as
// pgstore's createRuns does, in one transaction: all of them or none.
type CreateFunc func(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error)

// maxGroupRuns is the most runs one batch takes.
const maxGroupRuns = 1000

// maxGroupedCallRuns is the most runs a grouped call has. A larger call
// (a TriggerMany) takes the tenant's lock once for many runs already; it
// goes by itself, so that calls of one run never wait behind it.
const maxGroupedCallRuns = 64

// Do writes runs with create, in a batch with the calls queued with it,
// and returns the roots it started of them. Only calls that Groupable
// allows may be made through a group.
func (g *Group) Do(ctx context.Context, runs []store.NewRun, p store.ClaimParams, create CreateFunc) ([]store.ClaimedTask, error) {
	g.mu.Lock()
	if !g.busy {
		// Nothing is being written: the call is written at once, here,
		// as it would be without the group; calls made meanwhile queue.
		g.busy = true
		g.mu.Unlock()
		defer func() { // even if create panics, for a caller that recovers
			g.mu.Lock()
			g.handOn(create)
			g.mu.Unlock()
		}()
		return create(ctx, runs, p)
	}
	c := &createCall{ctx: ctx, runs: runs, p: p, done: make(chan struct{})}
	g.waiting = append(g.waiting, c)
	g.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		g.mu.Lock()
		i := slices.Index(g.waiting, c)
		if i >= 0 {
			g.waiting = slices.Delete(g.waiting, i, i+1)
		}
		g.mu.Unlock()
		if i >= 0 {
			return nil, ctx.Err()
		}
		// Its batch is being written: its answer says what was created
		// and which roots this worker now runs, so the call waits for it.
		// The batch ends early once every call in it has given up.
		<-c.done
	}
	return c.claimed, c.err
}

// handOn ends a write: the calls queued meanwhile are written by a
// goroutine of their own, or the group is idle. g.mu is held.
func (g *Group) handOn(create CreateFunc) {
	if len(g.waiting) > 0 {
		go g.write(create)
		return
	}
	g.busy = false
}

// write writes the queued calls, a batch at a time, until none is left.
func (g *Group) write(create CreateFunc) {
	for {
		g.mu.Lock()
		calls := g.take()
		if len(calls) == 0 {
			g.busy = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		writeBatch(calls, create)
	}
}

// take removes from the queue the calls of the next batch: the oldest
// call, and the later ones with the same claim parameters but the limit,
// up to maxGroupRuns runs, leaving out those whose context has ended.
// g.mu is held.
func (g *Group) take() []*createCall {
	if len(g.waiting) == 0 {
		return nil
	}
	first := g.waiting[0]
	runs := 0
	var calls []*createCall
	g.waiting = slices.DeleteFunc(g.waiting, func(c *createCall) bool {
		if c != first && (!sameClaim(first.p, c.p) || runs+len(c.runs) > maxGroupRuns) {
			return false
		}
		runs += len(c.runs)
		calls = append(calls, c)
		return true
	})
	return slices.DeleteFunc(calls, func(c *createCall) bool { return c.ctx.Err() != nil })
}

// sameClaim reports whether calls with claim parameters a and b may go in
// one batch: all but the limit are the same (one engine's StartRuns calls,
// or CreateRuns calls, which claim nothing).
func sameClaim(a, b store.ClaimParams) bool {
	return a.Worker == b.Worker && a.Lease == b.Lease &&
		slices.Equal(a.Signatures, b.Signatures) && slices.Equal(a.Known, b.Known) &&
		(a.Limit == 0) == (b.Limit == 0)
}

// writeBatch writes the runs of calls in one call of create, with the sum
// of their limits, and hands each call the roots started of its runs; it
// writes each call by itself when that fails and there were several. The
// batch's context ends when every call's has.
func writeBatch(calls []*createCall, create CreateFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var live atomic.Int64
	live.Store(int64(len(calls)))
	stops := make([]func() bool, len(calls))
	for i, c := range calls {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		})
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	if len(calls) == 1 {
		c := calls[0]
		c.claimed, c.err = create(ctx, c.runs, c.p)
		close(c.done)
		return
	}
	var all []store.NewRun
	p := calls[0].p
	p.Limit = 0
	for _, c := range calls {
		all = append(all, c.runs...)
		p.Limit += c.p.Limit
	}
	claimed, err := create(ctx, all, p)
	if err != nil {
		// One call's runs may have failed the batch: each call is written
		// again alone, under its own context, and fails only for its own
		// runs.
		for _, c := range calls {
			if c.err = c.ctx.Err(); c.err == nil {
				c.claimed, c.err = create(c.ctx, c.runs, c.p)
			}
			close(c.done)
		}
		return
	}
	handOut(calls, claimed)
	for _, c := range calls {
		// What the creation says of each run (NewRun.Existing, for a
		// duplicate key) goes back to the call's own runs.
		all = all[copy(c.runs, all):]
		close(c.done)
	}
}

// handOut hands each call the claimed roots of its own runs.
func handOut(calls []*createCall, claimed []store.ClaimedTask) {
	if len(claimed) == 0 {
		return // a batch of CreateRuns calls, or one that started nothing
	}
	callOf := map[dag.RunID]*createCall{}
	for _, c := range calls {
		for i := range c.runs {
			callOf[c.runs[i].ID] = c
		}
	}
	for _, t := range claimed {
		if c := callOf[t.RunID]; c != nil {
			c.claimed = append(c.claimed, t)
		}
	}
}

// Groupable reports whether a CreateRuns or StartRuns call may share a
// transaction: it has few runs (maxGroupedCallRuns) and none is capped (a
// capped run locks its slot, see pgstore's capNewRuns). Runs with idempotency keys
// are grouped: a batch creates one run a key, as one call does, and each
// duplicate's Existing is set. A StartRuns call is grouped only when its
// limit is at least the number of its runs' tenants: a batch starts at
// most one root a tenant, so no call then gets more roots than its limit.
func Groupable(runs []store.NewRun, p store.ClaimParams) bool {
	if len(runs) == 0 || len(runs) > maxGroupedCallRuns {
		return false
	}
	for i := range runs {
		if runs[i].Concurrency > 0 {
			return false
		}
	}
	if p.Limit == 0 {
		return true // CreateRuns: nothing is started
	}
	tenants := map[string]bool{}
	for i := range runs {
		tenants[runs[i].Tenant] = true
	}
	return p.Limit >= len(tenants)
}
