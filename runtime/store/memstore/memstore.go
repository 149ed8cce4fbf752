package memstore

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
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
}

// runKey is a run's idempotency key with its workflow and tenant.
type runKey struct{ workflow, tenant, key string }

func keyOf(r *store.Run, key string) runKey { return runKey{r.Workflow, r.Tenant, key} }

var (
	_ store.Store     = (*Store)(nil)
	_ store.Workers   = (*Store)(nil)
	_ store.Notifier  = (*Store)(nil)
	_ store.RunReader = (*Store)(nil)
	_ store.Deploys   = (*Store)(nil)
)

var (
	_ store.CancelNotifier = (*Store)(nil)
	_ store.StatusReader   = (*Store)(nil)
)

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
	rec     store.Run
	shape   *shape
	tasks   []task // the shape's tasks, then the elements of mapped tasks
	pending int    // unfinished tasks that count toward completion
	events  []store.Event
	// elems describes r.tasks[len(shape.tasks)+i]: the elements of mapped
	// tasks, created as they are mapped (see elements.go).
	elems     []element
	elemIndex map[string]int // live elements' task indexes, by name
	// Flow control (flow.go): the run's concurrency cap, if any; its
	// timeout; whether its deadline failed it.
	slot     *slot
	timeout  time.Duration
	timedOut bool
}

type task struct {
	status         store.TaskStatus
	attempt        int
	pendingParents int
	output         []byte
	err            string
	reason         string
	wakeAt         time.Time
	worker         string
	leaseUntil     time.Time
	finished       time.Time
	queueID        int64
	released       int // attempts released by a stopping worker: they do not count
	claimedAt      time.Time
	queuedAt       time.Time
	waitingLogged  bool     // a WAITING event was logged since it was last queued
	mapping        *mapping // a KindMap task's elements, once it is mapped
	// A signal wait's payload held for it until it begins to wait
	// (signal.go).
	held   bool
	signal []byte
}

type tenantGroup struct {
	id  int64
	ptr int64 // next free block
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
			shape:   sh,
			tasks:   make([]task, len(sh.tasks)),
			pending: sh.counted,
			timeout: nr.Timeout,
		}
		for ti := range r.tasks {
			r.tasks[ti] = task{status: store.TaskPending, pendingParents: len(sh.parents[ti])}
		}
		s.runs[nr.ID] = r
		s.arm(r, now)
		if nr.Concurrency > 0 {
			s.capRun(r, nr.Concurrency, now) // queues its roots if admitted
			continue
		}
		for _, ti := range sh.roots {
			claim := p.Serves(sh.tasks[ti].Signature)
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
		return x.Name == y.Name && x.Kind == y.Kind && x.MaxAttempts == y.MaxAttempts && x.Signature == y.Signature && slices.Equal(x.Parents, y.Parents)
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
		case store.KindStep, store.KindSleep, store.KindMap, store.KindSignal:
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
	t := &e.run.tasks[e.task]
	return t.status == store.TaskQueued && t.queueID == e.id
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
	t := &r.tasks[ti]
	t.status = store.TaskQueued
	t.queueID = -1 // no entry of the queue stands for it yet
	t.queuedAt = now
	t.waitingLogged = false
	r.event(now, ti, store.EventQueued, t.attempt, "")
}

// push puts a QUEUED task in the ready queue with its tenant's next fair
// id.
func (s *Store) push(r *run, ti int) {
	g := s.groups[r.rec.Tenant]
	if g == nil {
		g = &tenantGroup{id: s.nextGroup}
		s.nextGroup++
		s.groups[r.rec.Tenant] = g
	}
	block := max(g.ptr, s.frontier)
	g.ptr = block + 1
	id := g.id + store.BlockLength*block
	r.tasks[ti].queueID = id
	sig := r.spec(ti).Signature
	q := s.queues[sig]
	if q == nil {
		q = &readyQueue{}
		s.queues[sig] = q
	}
	heap.Push(q, queueEntry{id: id, run: r, task: ti})
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
	now := s.now()
	var claimed []store.ClaimedTask
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
		heap.Pop(best)
		s.frontier = max(s.frontier, head.id/store.BlockLength)
		claimed = append(claimed, s.claim(head.run, head.task, p, now))
	}
	return claimed, nil
}

func (s *Store) claim(r *run, ti int, p store.ClaimParams, now time.Time) store.ClaimedTask {
	t := &r.tasks[ti]
	t.status = store.TaskRunning
	t.attempt++
	t.worker = p.Worker
	t.claimedAt = now
	t.leaseUntil = now.Add(p.Lease)
	heap.Push(&s.leases, leaseEntry{until: t.leaseUntil, run: r, task: ti, attempt: t.attempt})
	r.event(now, ti, store.EventStarted, t.attempt, "")
	nt := r.spec(ti)
	c := store.ClaimedTask{
		RunID: r.rec.ID, Workflow: r.rec.Workflow, Tenant: r.rec.Tenant,
		Step: nt.Name, Kind: nt.Kind, Attempt: t.attempt, Signature: nt.Signature, Input: r.rec.Input,
	}
	el := r.element(ti)
	if ps := r.parentsOf(ti); len(ps) > 0 {
		c.Parents = make([]store.ParentResult, len(ps))
		for i, pi := range ps {
			pt := &r.tasks[pi]
			c.Parents[i] = store.ParentResult{Step: r.shape.tasks[pi].Name, Status: pt.status, Output: pt.output}
			if el != nil && c.Parents[i].Step == el.each {
				c.Parents[i].Output = el.item
			}
		}
	}
	if el != nil {
		c.Element = el.index
	}
	if nt.Kind == store.KindOnFailure && r.rec.Failure != nil {
		f := *r.rec.Failure
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

func (s *Store) complete(res *store.TaskResult, now time.Time) store.CompletionOutcome {
	stale := store.CompletionOutcome{Outcome: store.OutcomeStale}
	r := s.runs[res.RunID]
	if r == nil {
		return stale
	}
	ti, ok := r.indexOf(res.Step)
	if !ok {
		return stale
	}
	stale.RunStatus = r.rec.Status
	t := &r.tasks[ti]
	if t.status != store.TaskRunning || t.attempt != res.Attempt {
		return stale
	}
	out := store.CompletionOutcome{Outcome: res.Outcome}
	switch res.Outcome {
	case store.OutcomeCompleted:
		t.output = res.Output
		r.event(now, ti, store.EventCompleted, t.attempt, "")
		out.Enqueued = s.resolve(r, ti, store.TaskCompleted, now)
	case store.OutcomeSkipped:
		t.reason = res.Reason
		r.event(now, ti, store.EventSkipped, t.attempt, res.Reason)
		out.Enqueued = s.resolve(r, ti, store.TaskSkipped, now)
	case store.OutcomeFailed:
		t.status = store.TaskFailed
		t.err = res.Error
		t.finished = now
		r.event(now, ti, store.EventFailed, t.attempt, res.Error)
		if k := r.spec(ti).Kind; k != store.KindOnFailure {
			if k != store.KindElement {
				r.pending--
			}
			if r.rec.Status == store.RunRunning {
				out.Enqueued = s.failRun(r, ti, res.Error, now)
			}
		}
	case store.OutcomeRetry, store.OutcomeSleep:
		if r.rec.Status != store.RunRunning && r.spec(ti).Kind != store.KindOnFailure {
			s.cancelTask(r, ti, now)
			out.Outcome = store.OutcomeStale
			break
		}
		t.err = res.Error
		t.wakeAt, _ = res.WakeTime(now)
		if res.Outcome == store.OutcomeRetry {
			t.status = store.TaskBackoff
			r.event(now, ti, store.EventRetrying, t.attempt, res.Error)
		} else {
			t.status = store.TaskSleeping
			r.event(now, ti, store.EventSleeping, t.attempt, t.wakeAt.UTC().Format(time.RFC3339Nano))
		}
		heap.Push(&s.timers, timerEntry{wake: t.wakeAt, run: r, task: ti, attempt: t.attempt})
	case store.OutcomeAwait:
		if r.spec(ti).Kind != store.KindSignal {
			return stale
		}
		if r.rec.Status != store.RunRunning {
			s.cancelTask(r, ti, now)
			out.Outcome = store.OutcomeStale
			break
		}
		out.Enqueued = s.await(r, ti, res, now)
	case store.OutcomeMapped:
		if r.spec(ti).Kind != store.KindMap || len(res.Elements) == 0 {
			return stale
		}
		if r.rec.Status != store.RunRunning {
			s.cancelTask(r, ti, now)
			out.Outcome = store.OutcomeStale
			break
		}
		out.Enqueued = s.mapTask(r, ti, res, now)
	default:
		return stale
	}
	out.RunStatus = r.rec.Status
	return out
}

// resolve finishes a task as COMPLETED or SKIPPED, counts its children's
// pending parents down and enqueues those that reach zero. It returns how
// many it enqueued.
func (s *Store) resolve(r *run, ti int, status store.TaskStatus, now time.Time) int {
	t := &r.tasks[ti]
	t.status = status
	t.finished = now
	switch r.spec(ti).Kind {
	case store.KindOnFailure:
		return 0
	case store.KindElement:
		return s.elementResolved(r, ti, now)
	}
	r.pending--
	if r.rec.Status != store.RunRunning {
		return 0
	}
	enqueued := 0
	for _, c := range r.shape.children[ti] {
		ct := &r.tasks[c]
		if ct.pendingParents--; ct.pendingParents == 0 && ct.status == store.TaskPending {
			s.queueChild(r, c, now)
			enqueued++
		}
	}
	if r.pending == 0 {
		r.rec.Status = store.RunCompleted
		r.rec.FinishedAt = now
		s.runEnded(r, store.RunRunning, now)
	}
	return enqueued
}

// failRun fails a RUNNING run because task ti failed for good: its waiting
// tasks are cancelled and its onfailure task, if any, is enqueued. It
// returns how many tasks it enqueued.
func (s *Store) failRun(r *run, ti int, msg string, now time.Time) int {
	return s.endFailed(r, &dag.Failure{RunID: r.rec.ID, Step: r.spec(ti).Name, Attempt: r.tasks[ti].attempt, Message: msg}, false, now)
}

// endFailed fails a QUEUED or RUNNING run with f: its unfinished tasks but
// the onfailure task are cancelled (RUNNING ones only with stopRunning,
// otherwise they may finish), its onfailure task, if any, is enqueued, and
// what the run held is given back. It returns how many tasks it enqueued.
func (s *Store) endFailed(r *run, f *dag.Failure, stopRunning bool, now time.Time) int {
	was := r.rec.Status
	r.rec.Status = store.RunFailed
	r.rec.FinishedAt = now
	r.rec.Failure = f
	for _, i := range r.order() {
		st := r.tasks[i].status
		if i != r.shape.onFailure && !st.Terminal() && (stopRunning || st != store.TaskRunning) {
			s.cancelTask(r, i, now)
		}
	}
	defer s.runEnded(r, was, now) // after the onfailure task is queued
	if of := r.shape.onFailure; of >= 0 && r.tasks[of].status == store.TaskPending {
		s.enqueue(r, of, now)
		return 1
	}
	return 0
}

func (s *Store) cancelTask(r *run, ti int, now time.Time) {
	t := &r.tasks[ti]
	t.status = store.TaskCancelled
	t.finished = now
	r.event(now, ti, store.EventCancelled, t.attempt, "")
}

// ---- timers and leases ----

type timerEntry struct {
	wake    time.Time
	run     *run
	task    int
	attempt int
}

func (e timerEntry) live() bool {
	if e.task == deadlineTask {
		return !e.run.rec.Status.Terminal() && e.run.rec.Deadline.Equal(e.wake)
	}
	t := &e.run.tasks[e.task]
	return (t.status == store.TaskSleeping || t.status == store.TaskBackoff || t.status == store.TaskAwaiting) && t.attempt == e.attempt && t.wakeAt.Equal(e.wake)
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
	now := s.now()
	fired := 0
	for fired < limit {
		e, ok := s.timers.peek()
		if !ok || e.wake.After(now) {
			break
		}
		heap.Pop(&s.timers)
		fired++
		if e.task == deadlineTask {
			s.timeOut(e.run, now)
			continue
		}
		t := &e.run.tasks[e.task]
		switch t.status {
		case store.TaskSleeping:
			e.run.event(now, e.task, store.EventWoken, t.attempt, "")
			e.run.event(now, e.task, store.EventCompleted, t.attempt, "")
			s.resolve(e.run, e.task, store.TaskCompleted, now)
		case store.TaskAwaiting:
			e.run.event(now, e.task, store.EventSkipped, t.attempt, t.reason)
			s.resolve(e.run, e.task, store.TaskSkipped, now)
		default:
			s.enqueue(e.run, e.task, now)
		}
	}
	return fired, nil
}

// NextTimer implements store.Store.
func (s *Store) NextTimer(ctx context.Context) (time.Time, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	s.lock()
	defer s.unlock()
	e, ok := s.timers.peek()
	return e.wake, ok, nil
}

type leaseEntry struct {
	until   time.Time
	run     *run
	task    int
	attempt int
}

func (e leaseEntry) live() bool {
	t := &e.run.tasks[e.task]
	return t.status == store.TaskRunning && t.attempt == e.attempt && t.leaseUntil.Equal(e.until)
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
	now := s.now()
	n := 0
	for n < limit && s.leases.Len() > 0 {
		e := s.leases[0]
		if !e.live() {
			heap.Pop(&s.leases)
			continue
		}
		if e.until.After(now) {
			break
		}
		heap.Pop(&s.leases)
		t := &e.run.tasks[e.task]
		if alive := s.workers[t.worker]; alive.After(now) {
			// The worker is heartbeating: extend the lease to its heartbeat.
			t.leaseUntil = alive
			heap.Push(&s.leases, leaseEntry{until: alive, run: e.run, task: e.task, attempt: e.attempt})
			continue
		}
		n++
		s.rescue(e.run, e.task, now)
	}
	return n, nil
}

// rescue re-enqueues a RUNNING task whose worker is gone, with a new
// attempt, or fails it when it has no attempts left; in a run that is no
// longer RUNNING it cancels it.
func (s *Store) rescue(r *run, ti int, now time.Time) {
	t := &r.tasks[ti]
	nt := r.spec(ti)
	if r.rec.Status != store.RunRunning && nt.Kind != store.KindOnFailure {
		// A failed or cancelled run schedules nothing new.
		s.cancelTask(r, ti, now)
		return
	}
	if t.attempt < max(nt.MaxAttempts, 1)+t.released {
		r.event(now, ti, store.EventRescued, t.attempt, "lease expired")
		s.enqueue(r, ti, now)
		return
	}
	s.complete(&store.TaskResult{
		RunID: r.rec.ID, Step: nt.Name, Attempt: t.attempt,
		Outcome: store.OutcomeFailed, Error: "lease expired",
	}, now)
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
	if r.rec.Status.Terminal() {
		return false, nil
	}
	s.cancelLocked(r, s.now())
	return true, nil
}

// cancelLocked cancels a QUEUED or RUNNING run, with s.mu held: its
// unfinished tasks become CANCELLED (its queue entries and timers die with
// them) and the subscribers of cancellations hear of it.
func (s *Store) cancelLocked(r *run, now time.Time) {
	was := r.rec.Status
	r.rec.Status = store.RunCancelled
	r.rec.FinishedAt = now
	for _, i := range r.order() {
		if !r.tasks[i].status.Terminal() {
			s.cancelTask(r, i, now)
		}
	}
	s.announceCancel(r)
	s.runEnded(r, was, now)
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
	if rec.Failure != nil {
		f := *rec.Failure
		rec.Failure = &f
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
	return r.rec.Status, nil
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
		t, nt := &r.tasks[i], r.spec(i)
		st := store.Task{
			Name: nt.Name, Kind: nt.Kind, Parents: slices.Clone(nt.Parents), Signature: nt.Signature,
			Status: t.status, Attempt: t.attempt, Output: t.output, Error: t.err, Reason: t.reason,
			WakeAt: t.wakeAt, Worker: t.worker, Finished: t.finished,
		}
		if t.mapping != nil {
			st.Elements = len(t.mapping.elems)
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
