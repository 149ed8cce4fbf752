package pgstore

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dagenhq/dagen/runtime/store"
)

// createGroup makes concurrent CreateRuns calls share transactions (group
// commit). A call made while nothing is being written is written at once,
// by its own goroutine, as it would be without the group. A call made
// while a write is under way joins a queue; when the write ends, a
// goroutine writes the queued calls in one transaction, then the calls
// queued meanwhile in the next, until none is left.
//
// Each transaction that enqueues a tenant's tasks locks the tenant's row
// of the fair queue until it commits (see Enqueue), flush included. Sixteen
// goroutines of one service, each triggering runs of one tenant, queued on
// that lock: on a 2-core host, 1,400 triggers a second at 1 ms of CPU
// each (the process's and Postgres's), most of it handing the lock on.
// Sharing transactions, they made 14,000 a second at 77 µs.
//
// A call keeps what it would have alone:
//   - its runs are all created or none: when a batch of several calls
//     fails, each call is written again by itself, so a call fails only for
//     its own runs;
//   - its context: a call whose context ends while it waits in the queue
//     leaves it and creates nothing. One whose context ends while its batch
//     is being written returns the context's error at once; its runs may
//     still be created, as when a commit is cut short. The batch's own
//     context ends when every call in it has given up.
type createGroup struct {
	mu      sync.Mutex
	waiting []*createCall
	busy    bool // a write is under way: new calls queue
}

// createCall is one CreateRuns call in the group.
type createCall struct {
	ctx  context.Context
	runs []store.NewRun
	done chan struct{} // closed once err is set
	err  error
}

// maxGroupRuns is the most runs one batch takes. A call with more is not
// grouped: it is a batch of its own already.
const maxGroupRuns = 1000

// do writes runs with create, in a batch with the calls queued with it.
func (g *createGroup) do(ctx context.Context, runs []store.NewRun, create func(context.Context, []store.NewRun) error) error {
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
		return create(ctx, runs)
	}
	c := &createCall{ctx: ctx, runs: runs, done: make(chan struct{})}
	g.waiting = append(g.waiting, c)
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		select {
		case <-c.done: // written meanwhile
			return c.err
		default:
		}
		g.mu.Lock()
		if i := slices.Index(g.waiting, c); i >= 0 {
			g.waiting = slices.Delete(g.waiting, i, i+1)
		}
		g.mu.Unlock()
		return ctx.Err()
	}
}

// handOn ends a write: the calls queued meanwhile are written by a
// goroutine of their own, or the group is idle. g.mu is held.
func (g *createGroup) handOn(create func(context.Context, []store.NewRun) error) {
	if len(g.waiting) > 0 {
		go g.write(create)
		return
	}
	g.busy = false
}

// write writes the queued calls, a batch at a time, until none is left.
func (g *createGroup) write(create func(context.Context, []store.NewRun) error) {
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
// ones, up to maxGroupRuns runs (and at least one call), leaving out those
// whose context has ended. g.mu is held.
func (g *createGroup) take() []*createCall {
	n, runs := 0, 0
	for n < len(g.waiting) && (n == 0 || runs+len(g.waiting[n].runs) <= maxGroupRuns) {
		runs += len(g.waiting[n].runs)
		n++
	}
	calls := slices.Clone(g.waiting[:n])
	g.waiting = slices.Delete(g.waiting, 0, n)
	return slices.DeleteFunc(calls, func(c *createCall) bool { return c.ctx.Err() != nil })
}

// writeBatch writes the runs of calls in one call of create, and each call
// by itself when that fails and there were several. The batch's context
// ends when every call's has.
func writeBatch(calls []*createCall, create func(context.Context, []store.NewRun) error) {
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
	var err error
	if len(calls) == 1 {
		err = create(ctx, calls[0].runs)
	} else {
		var all []store.NewRun
		for _, c := range calls {
			all = append(all, c.runs...)
		}
		if err = create(ctx, all); err != nil {
			// One call's runs may have failed the batch: each call is
			// written again alone, under its own context, and fails only
			// for its own runs.
			for _, c := range calls {
				if c.err = c.ctx.Err(); c.err == nil {
					c.err = create(c.ctx, c.runs)
				}
				close(c.done)
			}
			return
		}
		// What the creation says of each run (NewRun.Existing, for a
		// duplicate key) goes back to the call's own runs.
		for _, c := range calls {
			all = all[copy(c.runs, all):]
		}
	}
	for _, c := range calls {
		c.err = err
		close(c.done)
	}
}

// groupable reports whether a CreateRuns call may share a transaction: it
// has few runs and none is capped (a capped run locks its slot, see
// capNewRuns). Runs with idempotency keys are grouped: a batch creates
// one run a key, as one call does, and each duplicate's Existing is set.
func groupable(runs []store.NewRun) bool {
	if len(runs) == 0 || len(runs) > maxGroupRuns {
		return false
	}
	for i := range runs {
		if runs[i].Concurrency > 0 {
			return false
		}
	}
	return true
}
