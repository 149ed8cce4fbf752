package memstore

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/internal/transition"
)

// Config configures a Store. The zero value is ready to use.
type Config struct {
	// Now is the store's clock: wake times, leases and timestamps are read
	// from it. Nil means time.Now. dagtest passes a fake clock.
	Now func() time.Time
}

// Store is an in-memory store.Store. It is safe for concurrent use.
type Store struct {
	now func() time.Time

	mu        sync.Mutex
	runs      map[dag.RunID]*run
	queues    map[string]*readyQueue // by task signature
	groups    map[string]*tenantGroup
	nextGroup int64
	frontier  int64 // highest block claimed so far
	timers    timerHeap
	leases    leaseHeap
	shapes    map[string]*shape
	workers   map[string]time.Time     // worker -> alive until
	beats     map[string]time.Time     // worker -> last heartbeat
	serves    map[string]store.Serving // worker -> what it published (Serve)
	sigInfos  map[string]store.SignatureInfo
	subs      map[chan struct{}]struct{}
	enqueued  bool // set by enqueue; cleared by notifyIfEnqueued

	cancels map[chan dag.RunID]struct{} // SubscribeCancels' channels
	keys    map[runKey]dag.RunID        // retained runs by idempotency key
	slots   map[slotKey]*slot           // concurrency caps (flow.go)

	schedules map[store.ScheduleRef]*store.Schedule // schedule.go

	cont *continuation // the CompleteAndContinue under way, or nil (continue.go)

	children map[dag.RunID][]dag.RunID // child runs by parent run (children.go)

	// Rate limits (flowcontrol.go).
	limits  map[string]store.RateLimit
	buckets map[bucketKey]*bucket
	waitSeq int64
}

// runKey is a run's idempotency key with its workflow and tenant.
type runKey struct{ workflow, tenant, key string }

func keyOf(r *store.Run, key string) runKey { return runKey{r.Workflow, r.Tenant, key} }

// Store implements every facet of store.Store. It has no leader to elect
// (store.Elector): one process owns it, so every worker over it leads.
var _ store.Store = (*Store)(nil)

// New returns an empty store. cfg may be nil.
func New(cfg *Config) *Store {
	s := &Store{
		now:      time.Now,
		runs:     make(map[dag.RunID]*run),
		queues:   make(map[string]*readyQueue),
		groups:   make(map[string]*tenantGroup),
		shapes:   make(map[string]*shape),
		workers:  make(map[string]time.Time),
		beats:    make(map[string]time.Time),
		serves:   make(map[string]store.Serving),
		sigInfos: make(map[string]store.SignatureInfo),
		subs:     make(map[chan struct{}]struct{}),
		cancels:  make(map[chan dag.RunID]struct{}),
		keys:     make(map[runKey]dag.RunID),
		slots:    make(map[slotKey]*slot),
		children: make(map[dag.RunID][]dag.RunID),
		limits:   make(map[string]store.RateLimit),
		buckets:  make(map[bucketKey]*bucket),
	}
	if cfg != nil && cfg.Now != nil {
		s.now = cfg.Now
	}
	return s
}

// shape is the graph of a run's tasks, shared by every run created with the
// same workflow, fingerprint and tasks.
type shape struct {
	tasks     []store.NewTask
	index     map[string]int
	parents   [][]int
	children  [][]int
	roots     []int
	onFailure int // index of the onfailure task, or -1
	counted   int // tasks that count toward completion
}

type run struct {
	// Run is the run's state as the transition core decides on it: its
	// status, pending tasks and failure are there, not in rec.
	transition.Run
	rec   store.Run
	shape *shape
	tasks []*task // the shape's tasks, then the elements of mapped tasks
	// events is the run's event log.
	events []store.Event
	// elems describes r.tasks[len(shape.tasks)+i]: the elements of mapped
	// tasks, created as they are mapped (see elements.go).
	elems     []element
	elemIndex map[string]int // live elements' task indexes, by name
	// Flow control (flow.go): the run's concurrency cap, if any; whether
	// its deadline failed it (its timeout is Run.Timeout).
	slot     *slot
	timedOut bool
	// traceParent is the run's NewRun.TraceParent.
	traceParent string
	// parent is the task attempt that started the run, or nil.
	parent *store.ParentLink
	// priority is the run's NewRun.Priority; rateKeys the buckets' keys
	// of its rate-limited tasks, by shape task (flowcontrol.go).
	priority int
	rateKeys []string
}

// task is a task of a run: its state as the transition core decides on
// it, and the store's own bookkeeping.
type task struct {
	transition.Task
	pendingParents int
	worker         string
	leaseUntil     time.Time
	finishedAt     time.Time
	queueID        int64
	released       int // attempts released by a stopping worker: they do not count
	claimedAt      time.Time
	queuedAt       time.Time
	waitingLogged  bool  // a WAITING event was logged since it was last queued
	elems          []int // a mapped task's elements, by element index, once it is mapped
	// A signal wait's payload held for it until it begins to wait
	// (signal.go).
	signal []byte
	// child is the run a child task waits for, or started last
	// (children.go).
	child dag.RunID
}

// newTask returns task ti of r, fresh in status st: what it is (its name,
// kind and run) with none of what happened to it.
func (r *run) newTask(ti int, st store.TaskStatus) task {
	nt := r.spec(ti)
	return task{Task: transition.Task{
		Run: &r.Run, Name: nt.Name, Kind: nt.Kind, MaxAttempts: max(nt.MaxAttempts, 1), Status: st, Ref: ti,
	}}
}

type tenantGroup struct {
	id  int64
	ptr int64 // next block with a free place
	// weight is how many places the tenant has a block, fill how many of
	// those of block ptr its tasks took.
	weight, fill int
	// prio are its queue entries of runs with a priority (flowcontrol.go).
	prio []queueEntry
}

// ---- runs ----

// CreateRuns implements store.Store.
func (s *Store) CreateRuns(ctx context.Context, runs []store.NewRun) error {
	_, err := s.createRuns(ctx, runs, store.ClaimParams{})
	return err
}

// StartRuns implements store.Starter.
func (s *Store) StartRuns(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	return s.createRuns(ctx, runs, p)
}

// createRuns creates runs, starts for p.Worker the roots store.Starter
// says, up to p.Limit, and enqueues the others.
func (s *Store) createRuns(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	shapes, err := s.prepare(runs)
	if err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	return s.createLocked(runs, shapes, p, s.now())
}

// prepare checks new runs' tenants and returns their shapes.
func (s *Store) prepare(runs []store.NewRun) ([]*shape, error) {
	shapes := make([]*shape, len(runs))
	for i := range runs {
		if err := store.ValidTenant(runs[i].Tenant); err != nil {
			return nil, fmt.Errorf("create run %s: %w: %w", runs[i].ID, store.ErrInvalidRun, err)
		}
		sh, err := s.shapeFor(&runs[i])
		if err != nil {
			return nil, err
		}
		shapes[i] = sh
	}
	return shapes, nil
}

// createLocked creates runs with their shapes (see prepare), under the
// store's lock, as createRuns says.
func (s *Store) createLocked(runs []store.NewRun, shapes []*shape, p store.ClaimParams, now time.Time) ([]store.ClaimedTask, error) {
	seen := make(map[dag.RunID]bool, len(runs))
	for _, nr := range runs {
		if _, ok := s.runs[nr.ID]; ok || seen[nr.ID] {
			return nil, fmt.Errorf("create run %s: %w", nr.ID, store.ErrRunExists)
		}
		seen[nr.ID] = true
	}
	for _, nr := range runs {
		if _, ok := s.groups[nr.Tenant]; !ok && s.nextGroup >= store.BlockLength {
			return nil, fmt.Errorf("create run %s: more than %d tenants", nr.ID, store.BlockLength)
		}
	}
	var claimed []store.ClaimedTask
	considered := make(map[string]bool) // tenants whose first root was a candidate
	serves := p.Serving()
	for i, nr := range runs {
		if nr.Key != "" {
			k := runKey{nr.Workflow, nr.Tenant, nr.Key}
			if id, taken := s.keys[k]; taken {
				runs[i].Existing = id
				continue
			}
			s.keys[k] = nr.ID
		}
		sh := shapes[i]
		r := &run{
			rec: store.Run{
				ID: nr.ID, Workflow: nr.Workflow, Fingerprint: nr.Fingerprint, Tenant: nr.Tenant,
				Status: store.RunRunning, Input: nr.Input, CreatedAt: now, Key: nr.Key,
				ConcurrencyKey: nr.ConcurrencyKey,
			},
			Run:         transition.Run{ID: nr.ID, Status: store.RunRunning, Pending: sh.counted, Timeout: nr.Timeout, EndSrc: -1},
			shape:       sh,
			tasks:       make([]*task, len(sh.tasks)),
			traceParent: nr.TraceParent,
			priority:    nr.Priority,
		}
		for ti, nt := range nr.Tasks {
			if nt.RateKey != "" {
				if r.rateKeys == nil {
					r.rateKeys = make([]string, len(nr.Tasks))
				}
				r.rateKeys[ti] = nt.RateKey
			}
		}
		for ti := range r.tasks {
			t := r.newTask(ti, store.TaskPending)
			t.pendingParents = len(sh.parents[ti])
			r.tasks[ti] = &t
		}
		s.runs[nr.ID] = r
		s.arm(r, now)
		if nr.Concurrency > 0 {
			s.capRun(r, nr.Concurrency, now) // queues its roots if admitted
			continue
		}
		for _, ti := range sh.roots {
			claim := serves(sh.tasks[ti].Signature) && sh.tasks[ti].RateLimit == ""
			if claim && len(considered) < p.Limit && !considered[nr.Tenant] {
				// The tenant's first root starts when the fair queue would
				// hand it out next: nothing of the tenant's is queued past
				// the head block.
				considered[nr.Tenant] = true
				if g := s.groups[nr.Tenant]; g == nil || g.ptr <= s.frontier+1 {
					r.event(now, ti, store.EventQueued, 0, "")
					claimed = append(claimed, s.claim(r, ti, p, now))
					continue
				}
			}
			s.enqueue(r, ti, now)
		}
	}
	return claimed, nil
}

// shapeFor validates a new run's tasks and returns their shape, from the
// cache when the same workflow and fingerprint were seen with the same
// tasks before.
func (s *Store) shapeFor(nr *store.NewRun) (*shape, error) {
	key := nr.Workflow + "\x00" + nr.Fingerprint
	s.mu.Lock()
	sh := s.shapes[key]
	s.mu.Unlock()
	if sh != nil && nr.Fingerprint != "" && sameTasks(sh.tasks, nr.Tasks) {
		return sh, nil
	}
	sh, err := buildShape(nr)
	if err != nil {
		return nil, err
	}
	if nr.Fingerprint != "" {
		s.mu.Lock()
		s.shapes[key] = sh
		s.mu.Unlock()
	}
	return sh, nil
}

func sameTasks(a, b []store.NewTask) bool {
	return slices.EqualFunc(a, b, func(x, y store.NewTask) bool {
		return x.Name == y.Name && x.Kind == y.Kind && x.MaxAttempts == y.MaxAttempts && x.Signature == y.Signature && slices.Equal(x.Parents, y.Parents) &&
			x.RateLimit == y.RateLimit && x.RateUnits == y.RateUnits
	})
}

func buildShape(nr *store.NewRun) (*shape, error) {
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
	sh := &shape{
		tasks:     slices.Clone(nr.Tasks),
		index:     make(map[string]int, n),
		parents:   make([][]int, n),
		children:  make([][]int, n),
		onFailure: -1,
	}
	for i, t := range nr.Tasks {
		if t.Name == "" {
			return nil, bad("task %d has no name", i)
		}
		if _, dup := sh.index[t.Name]; dup {
			return nil, bad("duplicate task %q", t.Name)
		}
		sh.index[t.Name] = i
		switch t.Kind {
		case store.KindStep, store.KindSleep, store.KindMap, store.KindSignal, store.KindChild:
			sh.counted++
		case store.KindOnFailure:
			if sh.onFailure >= 0 {
				return nil, bad("more than one onfailure task")
			}
			if len(t.Parents) > 0 {
				return nil, bad("onfailure task %q has parents", t.Name)
			}
			sh.onFailure = i
		default:
			return nil, bad("task %q has unknown kind %q", t.Name, t.Kind)
		}
	}
	if sh.counted == 0 {
		return nil, bad("no step tasks")
	}
	for i, t := range nr.Tasks {
		for _, p := range t.Parents {
			j, ok := sh.index[p]
			if !ok || j == i || sh.tasks[j].Kind == store.KindOnFailure || slices.Contains(sh.parents[i], j) {
				return nil, bad("task %q has bad parent %q (unknown, itself, onfailure or repeated)", t.Name, p)
			}
			sh.parents[i] = append(sh.parents[i], j)
			sh.children[j] = append(sh.children[j], i)
		}
		if len(t.Parents) == 0 && t.Kind != store.KindOnFailure {
			sh.roots = append(sh.roots, i)
		}
	}
	// Kahn's algorithm: every task must be reachable in topological order.
	indeg := make([]int, n)
	var queue []int
	for i := range nr.Tasks {
		indeg[i] = len(sh.parents[i])
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for seen := 0; len(queue) > 0; seen++ {
		i := queue[0]
		queue = queue[1:]
		for _, c := range sh.children[i] {
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
	return sh, nil
}

// ---- the fair ready queue ----

type queueEntry struct {
	id   int64
	run  *run
	task int
}

type readyQueue []queueEntry

func (q readyQueue) Len() int           { return len(q) }
func (q readyQueue) Less(i, j int) bool { return q[i].id < q[j].id }
func (q readyQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)        { *q = append(*q, x.(queueEntry)) }
func (q *readyQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// live reports whether a queue entry still stands for a queued task:
// entries of cancelled runs are dropped lazily.
func (e queueEntry) live() bool {
	t := e.run.tasks[e.task]
	return t.Status == store.TaskQueued && t.queueID == e.id
}

// peek drops dead entries and returns the head.
func (q *readyQueue) peek() (queueEntry, bool) {
	for q.Len() > 0 {
		if e := (*q)[0]; e.live() {
			return e, true
		}
		heap.Pop(q)
	}
	return queueEntry{}, false
}

// enqueue puts a task in the ready queue with its tenant's next fair id.
func (s *Store) enqueue(r *run, ti int, now time.Time) {
	s.markQueued(r, ti, now)
	s.push(r, ti)
}

// markQueued makes a task QUEUED and logs its QUEUED event; push puts it
// in the ready queue.
func (s *Store) markQueued(r *run, ti int, now time.Time) {
	t := r.tasks[ti]
	t.Status = store.TaskQueued
	t.queueID = -1 // no entry of the queue stands for it yet
	t.queuedAt = now
	t.waitingLogged = false
	r.event(now, ti, store.EventQueued, t.Attempt, "")
}

// push puts a QUEUED task in the ready queue with its tenant's next fair
// place, or, when it is rate-limited, there only if its bucket has room
// for it now, else in its bucket's waiting list (see flowcontrol.go).
func (s *Store) push(r *run, ti int) {
	if b, units, ok := r.rateOf(ti); ok {
		r.tasks[ti].queueID = -1
		if !s.straightIn(r, ti, b, units) {
			s.park(r, ti, b, units)
		}
		return
	}
	s.place(r, ti)
}

// place puts a QUEUED task in the ready queue at its tenant's next place:
// a tenant of weight w has w places a block.
func (s *Store) place(r *run, ti int) {
	g := s.group(r.rec.Tenant)
	if s.frontier > g.ptr {
		g.ptr, g.fill = s.frontier, 0
	}
	block := g.ptr
	if g.fill++; g.fill >= g.weight {
		g.ptr, g.fill = g.ptr+1, 0
	}
	id := g.id + store.BlockLength*block
	r.tasks[ti].queueID = id
	sig := r.spec(ti).Signature
	q := s.queues[sig]
	if q == nil {
		q = &readyQueue{}
		s.queues[sig] = q
	}
	e := queueEntry{id: id, run: r, task: ti}
	heap.Push(q, e)
	if r.priority > 0 {
		g.prio = append(g.prio, e)
	}
	s.enqueued = true
}

// ClaimTasks implements store.Store.
func (s *Store) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		return nil, nil
	}
	s.lock()
	defer s.unlock()
	var queues []*readyQueue
	if len(p.Signatures) == 0 {
		for _, q := range s.queues {
			queues = append(queues, q)
		}
	} else {
		for _, sig := range p.Signatures {
			if q := s.queues[sig]; q != nil {
				queues = append(queues, q)
			}
		}
	}
	served := make(map[*readyQueue]bool, len(queues))
	for _, q := range queues {
		served[q] = true
	}
	now := s.now()
	var claimed []store.ClaimedTask
	var places []int64 // the queue id each claimed task had: see tenantQueued
	used := 0          // slots, with the Extra of the tasks claimed
	for len(claimed) < p.Limit {
		var best *readyQueue
		var head queueEntry
		for _, q := range queues {
			if e, ok := q.peek(); ok && (best == nil || e.id < head.id) {
				best, head = q, e
			}
		}
		if best == nil {
			break
		}
		// As pgstore's claim: the place's own task is weighed, at least
		// one is taken.
		if used += 1 + p.Extra[head.run.spec(head.task).Signature]; used > p.Limit && len(claimed) > 0 {
			break
		}
		heap.Pop(best)
		s.frontier = max(s.frontier, head.id/store.BlockLength)
		// The place goes to the tenant's entry of the highest priority;
		// the entry passed over takes that one's place.
		if e, q := s.betterEntry(head, served); q != nil {
			removeEntry(q, e)
			head.run.tasks[head.task].queueID = e.id
			heap.Push(best, queueEntry{id: e.id, run: head.run, task: head.task})
			if g := s.groups[head.run.rec.Tenant]; head.run.priority > 0 {
				g.prio = append(g.prio, queueEntry{id: e.id, run: head.run, task: head.task})
			}
			head = e
		}
		s.spend(head.run, head.task, now)
		claimed = append(claimed, s.claim(head.run, head.task, p, now))
		places = append(places, head.id)
	}
	s.tenantQueued(claimed, places)
	return claimed, nil
}

// tenantQueued sets each claimed task's TenantQueued as pgstore's claim
// does: a tenant with a later task in the claim has one queued behind its
// earlier ones; for its last, whether its next place in the fair queue
// (a tenant of weight w has w a block) lies past the block of the place
// the task had.
func (s *Store) tenantQueued(claimed []store.ClaimedTask, places []int64) {
	last := make(map[string]int, len(claimed))
	for i := range claimed {
		last[claimed[i].Tenant] = i
	}
	for i := range claimed {
		c := &claimed[i]
		if last[c.Tenant] != i {
			c.TenantQueued = true
			continue
		}
		g := s.groups[c.Tenant]
		w := int64(g.weight)
		c.TenantQueued = g.ptr*w+int64(g.fill) > (places[i]/store.BlockLength+1)*w
	}
}

// newClaim returns a fence token for a claim (store.ClaimedTask.Claim):
// random, never zero. memstore cannot lose its history, but it draws its
// tokens as a shared store must, so that the conformance suite holds both
// stores to the same contract.
func newClaim() int64 { return rand.Int64N(math.MaxInt64) + 1 }

func (s *Store) claim(r *run, ti int, p store.ClaimParams, now time.Time) store.ClaimedTask {
	t := r.tasks[ti]
	var queued time.Duration
	if t.Status == store.TaskQueued && !t.queuedAt.IsZero() {
		queued = now.Sub(t.queuedAt)
	}
	t.Status = store.TaskRunning
	t.Attempt++
	t.Claim = newClaim()
	t.worker = p.Worker
	t.claimedAt = now
	t.leaseUntil = now.Add(p.Lease)
	heap.Push(&s.leases, leaseEntry{until: t.leaseUntil, run: r, task: ti, Attempt: t.Attempt, claim: t.Claim})
	r.event(now, ti, store.EventStarted, t.Attempt, "")
	nt := r.spec(ti)
	c := store.ClaimedTask{
		RunID: r.rec.ID, Workflow: r.rec.Workflow, Tenant: r.rec.Tenant,
		Step: nt.Name, Kind: nt.Kind, Attempt: t.Attempt, Claim: t.Claim, Signature: nt.Signature, Input: r.rec.Input,
		TraceParent: r.traceParent, Queued: queued,
	}
	el := r.element(ti)
	if ps := r.parentsOf(ti); len(ps) > 0 {
		c.Parents = make([]store.ParentResult, len(ps))
		for i, pi := range ps {
			pt := r.tasks[pi]
			c.Parents[i] = store.ParentResult{Step: r.shape.tasks[pi].Name, Status: pt.Status, Output: pt.Output}
			if el != nil && c.Parents[i].Step == el.each {
				c.Parents[i].Output = el.item
			}
		}
	}
	if el != nil {
		c.Element = el.index
	}
	if nt.Kind == store.KindOnFailure && r.Failure != nil {
		f := *r.Failure
		c.Failure = &f
	}
	return c
}

// ---- completion ----

// CompleteTasks implements store.Store.
func (s *Store) CompleteTasks(ctx context.Context, results []store.TaskResult) ([]store.CompletionOutcome, error) {
	out, _, err := s.completeTasks(ctx, results, nil)
	return out, err
}

// ---- timers and leases ----

type timerEntry struct {
	wake    time.Time
	run     *run
	task    int
	Attempt int
	// claim is the token of the claim whose attempt set the timer: a
	// wake belongs to its attempt, and the attempt to its claim.
	claim int64
	// kind is set for the timers of child runs (children.go): their
	// tasks wait without a wake time of their own.
	kind string
}

func (e timerEntry) live() bool {
	switch {
	case e.task == deadlineTask:
		return !e.run.Status.Terminal() && e.run.rec.Deadline.Equal(e.wake)
	case e.task == cancelTask:
		return !e.run.Status.Terminal()
	case e.kind == transition.TimerChild:
		t := e.run.tasks[e.task]
		return t.Status == store.TaskAwaiting && t.Attempt == e.Attempt && t.Claim == e.claim
	}
	t := e.run.tasks[e.task]
	return t.Waiting() && t.Attempt == e.Attempt && t.Claim == e.claim && t.WakeAt.Equal(e.wake)
}

type timerHeap []timerEntry

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].wake.Before(h[j].wake) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (h *timerHeap) peek() (timerEntry, bool) {
	for h.Len() > 0 {
		if e := (*h)[0]; e.live() {
			return e, true
		}
		heap.Pop(h)
	}
	return timerEntry{}, false
}

// FireTimers implements store.Store.
func (s *Store) FireTimers(ctx context.Context, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.lock()
	defer s.unlock()
	b := s.newBatch(s.now(), 0)
	fired := s.admitDue(b.now)
	for fired < limit {
		e, ok := s.timers.peek()
		if !ok || e.wake.After(b.now) {
			break
		}
		heap.Pop(&s.timers)
		fired++
		switch {
		case e.task == deadlineTask:
			b.timeOut(e.run, -1)
			continue
		case e.task == cancelTask:
			b.cancelRun(e.run)
			continue
		case e.kind == transition.TimerChild:
			b.fireChild(e)
			continue
		}
		t := e.run.tasks[e.task]
		b.tr.Fire(&t.Task, timerKind(t.Status), e.Attempt, e.claim, -1)
	}
	b.settle()
	return fired, nil
}

// timerKind is the kind of timer a task in status st waits for.
func timerKind(st store.TaskStatus) string {
	switch st {
	case store.TaskSleeping:
		return transition.TimerSleep
	case store.TaskAwaiting:
		return transition.TimerSignal
	}
	return transition.TimerRetry
}

// NextTimer implements store.Store.
func (s *Store) NextTimer(ctx context.Context) (time.Time, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	s.lock()
	defer s.unlock()
	e, ok := s.timers.peek()
	if w, due := s.nextWake(); due && (!ok || w.Before(e.wake)) {
		return w, true, nil
	}
	return e.wake, ok, nil
}

type leaseEntry struct {
	until   time.Time
	run     *run
	task    int
	Attempt int
	claim   int64 // the claim's token: the entry is the lease of that claim only
}

func (e leaseEntry) live() bool {
	t := e.run.tasks[e.task]
	return transition.Holds(&t.Task, e.Attempt, e.claim) && t.leaseUntil.Equal(e.until)
}

type leaseHeap []leaseEntry

func (h leaseHeap) Len() int           { return len(h) }
func (h leaseHeap) Less(i, j int) bool { return h[i].until.Before(h[j].until) }
func (h leaseHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *leaseHeap) Push(x any)        { *h = append(*h, x.(leaseEntry)) }
func (h *leaseHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// RescueExpired implements store.Store.
func (s *Store) RescueExpired(ctx context.Context, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.lock()
	defer s.unlock()
	b := s.newBatch(s.now(), 0)
	n := 0
	for n < limit && s.leases.Len() > 0 {
		e := s.leases[0]
		if !e.live() {
			heap.Pop(&s.leases)
			continue
		}
		if e.until.After(b.now) {
			break
		}
		heap.Pop(&s.leases)
		t := e.run.tasks[e.task]
		if alive := s.workers[t.worker]; alive.After(b.now) {
			// The worker is heartbeating: extend the lease to its heartbeat.
			t.leaseUntil = alive
			heap.Push(&s.leases, leaseEntry{until: alive, run: e.run, task: e.task, Attempt: e.Attempt, claim: e.claim})
			continue
		}
		n++
		// Released attempts do not count.
		t.MaxAttempts = max(e.run.spec(e.task).MaxAttempts, 1) + t.released
		b.tr.Rescue(&t.Task, -1)
	}
	b.settle()
	return n, nil
}

// ---- cancellation and reads ----

// CancelRun implements store.Store.
func (s *Store) CancelRun(ctx context.Context, id dag.RunID) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.lock()
	defer s.unlock()
	r := s.runs[id]
	if r == nil {
		return false, fmt.Errorf("cancel run %s: %w", id, store.ErrRunNotFound)
	}
	if r.Status.Terminal() {
		return false, nil
	}
	s.cancelLocked(r, s.now())
	return true, nil
}

// cancelLocked cancels a QUEUED or RUNNING run, with s.mu held: its
// unfinished tasks become CANCELLED (its queue entries and timers die with
// them) and the subscribers of cancellations hear of it.
func (s *Store) cancelLocked(r *run, now time.Time) {
	b := s.newBatch(now, 0)
	b.cancelRun(r)
	b.settle()
}

// announceCancel tells the subscribers of cancellations that the run's
// running steps must stop.
func (s *Store) announceCancel(r *run) {
	for ch := range s.cancels {
		select {
		case ch <- r.rec.ID:
		default: // a hint: the subscriber's heartbeat tells it anyway
		}
	}
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, id dag.RunID) (store.Run, error) {
	if err := ctx.Err(); err != nil {
		return store.Run{}, err
	}
	s.lock()
	defer s.unlock()
	r := s.runs[id]
	if r == nil {
		return store.Run{}, fmt.Errorf("get run %s: %w", id, store.ErrRunNotFound)
	}
	return r.record(), nil
}

// record returns a copy of the run's record.
func (r *run) record() store.Run {
	rec := r.rec
	rec.Status = r.Status
	if r.Failure != nil {
		f := *r.Failure
		rec.Failure = &f
	}
	if r.parent != nil {
		p := *r.parent
		p.Claim = 0 // not read back (store.Run.Parent)
		rec.Parent = &p
	}
	return rec
}

// RunStatus implements store.StatusReader.
func (s *Store) RunStatus(ctx context.Context, id dag.RunID) (store.RunStatus, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.lock()
	defer s.unlock()
	r := s.runs[id]
	if r == nil {
		return "", fmt.Errorf("read status of run %s: %w", id, store.ErrRunNotFound)
	}
	return r.Status, nil
}

// ReadRun implements store.RunReader.
func (s *Store) ReadRun(ctx context.Context, id dag.RunID) (store.Run, []store.Task, error) {
	run, err := s.GetRun(ctx, id)
	if err != nil {
		return store.Run{}, nil, err
	}
	tasks, err := s.ListTasks(ctx, id)
	if err != nil {
		return store.Run{}, nil, err
	}
	return run, tasks, nil
}

// ListTasks implements store.Store.
func (s *Store) ListTasks(ctx context.Context, id dag.RunID) ([]store.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	r := s.runs[id]
	if r == nil {
		return nil, fmt.Errorf("list tasks of run %s: %w", id, store.ErrRunNotFound)
	}
	return r.storeTasks(), nil
}

// storeTasks returns the run's tasks, in creation order, as ListTasks
// does.
func (r *run) storeTasks() []store.Task {
	tasks := make([]store.Task, 0, len(r.tasks))
	for _, i := range r.order() {
		t, nt := r.tasks[i], r.spec(i)
		st := store.Task{
			Name: nt.Name, Kind: nt.Kind, Parents: slices.Clone(nt.Parents), Signature: nt.Signature,
			Status: t.Status, Attempt: t.Attempt, Claim: t.Claim, Output: t.Output, Error: t.Err, Reason: t.Reason,
			WakeAt: t.WakeAt, Worker: t.worker, Finished: t.finishedAt,
		}
		if t.elems != nil {
			st.Elements = len(t.elems)
		}
		if el := r.element(i); el != nil {
			st.Element = el.index
		}
		tasks = append(tasks, st)
	}
	return tasks
}

// ListEvents implements store.Store.
func (s *Store) ListEvents(ctx context.Context, id dag.RunID) ([]store.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	r := s.runs[id]
	if r == nil {
		return nil, fmt.Errorf("list events of run %s: %w", id, store.ErrRunNotFound)
	}
	return slices.Clone(r.events), nil
}

func (r *run) event(at time.Time, ti int, typ store.EventType, attempt int, detail string) {
	r.events = append(r.events, store.Event{At: at, Step: r.spec(ti).Name, Type: typ, Attempt: attempt, Detail: detail})
}
