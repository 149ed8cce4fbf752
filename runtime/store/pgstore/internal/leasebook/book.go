package leasebook

import (
	"sync"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// A Book keeps, for the claims a store made, each attempt they started
// until it is answered: the attempt's lease, so that a claim's lease is
// deleted once all of its attempts were answered, and the claim's View of
// the task's row, so that a completion of the attempt is decided without
// reading the row again. The zero Book is empty and ready to use; it is
// safe for concurrent use.
//
// A claim (ClaimTasks, the steps a CompleteAndContinue starts, the roots a
// StartRuns starts) writes one lease for all of its tasks (migration 012):
// a row that lists each task with the STARTED event id of its attempt.
// Completions write nothing to it: when the commit of the last answer to
// one of its attempts (a completion, or a stale one: the attempt ended
// some other way) returned, the book queues the lease, and the next
// transaction that ends leases deletes it (the store's batch.endLeases,
// TakeDone), with no round trip of its own.
//
// The book only saves the leader work. A lease it never hears the end of
// (a claim whose answer was lost, a task released, a process that
// stopped) is deleted by the leader once it expires and no task holds it
// (RescueExpired); so is one whose deletion was rolled back. The book
// never deletes a lease early: it counts answers only once their commit
// returned.
type Book struct {
	mu       sync.Mutex
	attempts map[attemptKey]attempt // the attempts not answered yet
	left     map[Lease]int          // a lease → its attempts not answered yet
	done     []Lease                // leases with every attempt answered
}

// A Lease names a claim's lease row: its id, the least STARTED event id of
// its tasks, and its token, the least claim token of its tasks (migration
// 014). The id comes from a sequence, and a database restored to an older
// history hands it out again, to another claim's lease; the token tells
// the two apart, so a process of the lost history deletes only its own.
type Lease struct {
	ID, Token int64
}

// LeaseOf names the lease of id that the claim of tasks wrote: its token
// is their least claim token, as the claim statements write it.
func LeaseOf(id int64, tasks []store.ClaimedTask) Lease {
	l := Lease{ID: id}
	for i := range tasks {
		if i == 0 || tasks[i].Claim < l.Token {
			l.Token = tasks[i].Claim
		}
	}
	return l
}

// attempt is what the book keeps of an attempt not answered yet: its
// lease, its claim's token, and its claim's view of the task, zero when
// none was kept.
type attempt struct {
	lease Lease
	claim int64
	view  View
}

// attemptKey names one attempt of a task.
type attemptKey struct {
	run     dag.RunID
	step    string
	attempt int
}

// A View is what a claim returned of a task's row (migration 013):
// enough to decide a completed result of the attempt it started without
// reading the row again. The book keeps it with the attempt's lease until
// the attempt is answered.
//
// It is only a proposal. UpdateTasks writes a task decided on a view only
// where the row is still RUNNING under Claim, and fails the whole
// transaction otherwise (dagen_claim_moved): the completion then decides
// again on the rows it reads (see the store's completeTasks).
type View struct {
	Kind         store.TaskKind
	Signature    string
	Children     []string
	StartedEvent int64      // the attempt's STARTED event id: its entry in its lease
	Ctid         pgtype.TID // where the claim left the row
	// Claim is the claim's token (store.ClaimedTask.Claim): unlike the
	// STARTED event id, which comes from a sequence, it stays unique to
	// the claim when the database's history is rolled back.
	Claim int64
}

// ViewOf is the claim view of task t, made of what its claim returned of
// the row: its children, its STARTED event id and where it is.
func ViewOf(t *store.ClaimedTask, children []string, startedEvent int64, ctid pgtype.TID) View {
	return View{Kind: t.Kind, Signature: t.Signature, Children: children, StartedEvent: startedEvent, Ctid: ctid, Claim: t.Claim}
}

// Claimed records that the claim whose lease is lease started tasks, and
// what it returned of their rows (views, by task; nil when it kept none).
// An attempt recorded already (by a claim that was rolled back, whose runs
// were then created again) is moved to this lease, and forgets its view.
func (l *Book) Claimed(lease Lease, tasks []store.ClaimedTask, views []View) {
	if len(tasks) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.attempts == nil {
		l.attempts = make(map[attemptKey]attempt)
		l.left = make(map[Lease]int)
	}
	for i, t := range tasks {
		k := attemptKey{t.RunID, t.Step, t.Attempt}
		if old, ok := l.attempts[k]; ok {
			l.end(old.lease)
		}
		a := attempt{lease: lease, claim: t.Claim}
		if views != nil {
			a.view = views[i]
		}
		l.attempts[k] = a
		l.left[lease]++
	}
}

// Answered records that the answers to these attempts committed: each
// result's attempt ended, whatever its outcome says.
func (l *Book) Answered(results []store.TaskResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range results {
		k := attemptKey{results[i].RunID, results[i].Step, results[i].Attempt}
		a, ok := l.attempts[k]
		if !ok || a.claim != results[i].Claim {
			// Claimed by another store, answered already, or the answer
			// of a claim of the same attempt number that this store's
			// rolled-back history forgot: not the attempt the book keeps.
			continue
		}
		delete(l.attempts, k)
		l.end(a.lease)
	}
}

// end counts one attempt of lease answered; the last queues the lease.
func (l *Book) end(lease Lease) {
	if l.left[lease]--; l.left[lease] <= 0 {
		delete(l.left, lease)
		l.done = append(l.done, lease)
	}
}

// TakeDone returns the leases whose attempts were all answered, and
// forgets them.
func (l *Book) TakeDone() []Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	done := l.done
	l.done = nil
	return done
}

// viewFor returns the view a completion may decide res on: one kept for
// its attempt, of a step (not a mapped task, an element, a signal wait or
// an onfailure task, whose rows others may write while they run), when res
// completes it. Other outcomes are rare; they read the row.
func (l *Book) viewFor(res *store.TaskResult) (View, bool) {
	if res.Outcome != store.OutcomeCompleted {
		return View{}, false
	}
	a := l.attempts[attemptKey{res.RunID, res.Step, res.Attempt}]
	if a.view.Kind != store.KindStep || a.claim != res.Claim { // none kept (zero), not a step's, or another claim's
		return View{}, false
	}
	v := a.view
	return v, true
}

// ViewsFor returns, by result, the views a completion may decide the
// results on (see viewFor), zero for a result with none (see Decides), or
// nil when there are none at all.
func (l *Book) ViewsFor(results []store.TaskResult) []View {
	l.mu.Lock()
	defer l.mu.Unlock()
	var views []View
	for i := range results {
		v, ok := l.viewFor(&results[i])
		if !ok {
			continue
		}
		if views == nil {
			views = make([]View, len(results))
		}
		views[i] = v
	}
	return views
}

// Decides reports whether views, from ViewsFor, holds a view for result i.
func Decides(views []View, i int) bool {
	return views != nil && views[i].Kind == store.KindStep
}
