package leasebook

import (
	"sync"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// A leaseBook knows, for the claims this store made, which of their
// attempts have not been answered yet, so that a claim's lease is deleted
// once all of them were.
//
// A claim (ClaimTasks, the steps a CompleteAndContinue starts, the roots a
// StartRuns starts) writes one lease for all of its tasks (migration 012):
// a row that lists each task with the STARTED event id of its attempt.
// Completions write nothing to it: when the commit of the last answer to
// one of its attempts (a completion, or a stale one: the attempt ended
// some other way) returned, the book queues the lease, and the next
// transaction that ends leases deletes it (batch.endLeases), with no round
// trip of its own.
//
// The book only saves the leader work. A lease it never hears the end of
// (a claim whose answer was lost, a task released, a process that
// stopped) is deleted by the leader once it expires and no task holds it
// (RescueExpired); so is one whose deletion was rolled back. The book
// never deletes a lease early: it counts answers only once their commit
// returned.
type leaseBook struct {
	mu       sync.Mutex
	attempts map[attemptKey]attempt // the attempts not answered yet
	left     map[int64]int          // a lease → its attempts not answered yet
	done     []int64                // leases with every attempt answered
}

// attempt is what the book keeps of an attempt not answered yet: its
// lease, and its claim's view of the task (views.go), zero when none was
// kept.
type attempt struct {
	lease int64
	view  claimView
}

// attemptKey names one attempt of a task.
type attemptKey struct {
	run     dag.RunID
	step    string
	attempt int
}

// claimed records that the claim whose lease is lease started tasks, and
// what it returned of their rows (views, by task; nil when it kept none).
// An attempt recorded already (by a claim that was rolled back, whose runs
// were then created again) is moved to this lease, and forgets its view.
func (l *leaseBook) claimed(lease int64, tasks []store.ClaimedTask, views []claimView) {
	if len(tasks) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.attempts == nil {
		l.attempts = make(map[attemptKey]attempt)
		l.left = make(map[int64]int)
	}
	for i, t := range tasks {
		k := attemptKey{t.RunID, t.Step, t.Attempt}
		if old, ok := l.attempts[k]; ok {
			l.end(old.lease)
		}
		a := attempt{lease: lease}
		if views != nil {
			a.view = views[i]
		}
		l.attempts[k] = a
		l.left[lease]++
	}
}

// answered records that the answers to these attempts committed: each
// result's attempt ended, whatever its outcome says.
func (l *leaseBook) answered(results []store.TaskResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range results {
		k := attemptKey{results[i].RunID, results[i].Step, results[i].Attempt}
		a, ok := l.attempts[k]
		if !ok {
			continue // claimed by another store, or answered already
		}
		delete(l.attempts, k)
		l.end(a.lease)
	}
}

// end counts one attempt of lease answered; the last queues the lease.
func (l *leaseBook) end(lease int64) {
	if l.left[lease]--; l.left[lease] <= 0 {
		delete(l.left, lease)
		l.done = append(l.done, lease)
	}
}

// takeDone returns the leases whose attempts were all answered, and
// forgets them.
func (l *leaseBook) takeDone() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	done := l.done
	l.done = nil
	return done
}
