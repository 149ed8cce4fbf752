package memstore

import (
	"cmp"
	"container/heap"
	"context"
	"slices"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

// bucketKey names one bucket of a rate limit.
type bucketKey struct{ limit, key string }

// bucket is a rate limit's bucket of one key: its tokens at updated, the
// tasks waiting for them (in admission order) and those let into the fair
// queue, whose units it holds until they are claimed.
type bucket struct {
	tokens   float64
	updated  time.Time
	waiting  []waitEntry
	admitted []waitEntry
	wake     time.Time // when to look at waiting next; zero when none waits
}

// waitEntry is a task waiting for, or let in with, a bucket's tokens.
type waitEntry struct {
	run      *run
	task     int
	priority int
	seq      int64
	units    int
}

// live reports whether the entry still stands for a QUEUED task (a
// cancelled run's tasks are dropped lazily).
func (e waitEntry) live() bool { return e.run.tasks[e.task].Status == store.TaskQueued }

// rateOf returns the bucket task ti takes tokens from, its units, and
// whether it is rate-limited at all: an element takes its mapped task's,
// and the mapped task itself none.
func (r *run) rateOf(ti int) (bucketKey, int, bool) {
	if el := r.element(ti); el != nil {
		ti = el.mapTi
	} else if r.spec(ti).Kind == store.KindMap {
		return bucketKey{}, 0, false // its elements take the tokens
	}
	nt := r.spec(ti)
	if nt.RateLimit == "" {
		return bucketKey{}, 0, false
	}
	var key string
	if ti < len(r.rateKeys) {
		key = r.rateKeys[ti]
	}
	return bucketKey{nt.RateLimit, key}, max(nt.RateUnits, 1), true
}

// PutRateLimits implements store.FlowControl.
func (s *Store) PutRateLimits(ctx context.Context, limits []store.RateLimit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, l := range limits {
		if err := l.Validate(); err != nil {
			return err
		}
	}
	s.lock()
	defer s.unlock()
	for _, l := range limits {
		s.limits[l.Name] = l
	}
	return nil
}

// SetTenantWeight implements store.FlowControl.
func (s *Store) SetTenantWeight(ctx context.Context, tenant string, weight int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.ValidTenant(tenant); err != nil {
		return err
	}
	if err := store.ValidWeight(weight); err != nil {
		return err
	}
	s.lock()
	defer s.unlock()
	g := s.group(tenant)
	if g.fill > 0 { // its places in that block were counted for its old weight
		g.ptr++
		g.fill = 0
	}
	g.weight = weight
	return nil
}

// TenantWeights implements store.FlowControl.
func (s *Store) TenantWeights(ctx context.Context) ([]store.TenantWeight, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	var out []store.TenantWeight
	for tenant, g := range s.groups {
		if g.weight > 1 {
			out = append(out, store.TenantWeight{Tenant: tenant, Weight: g.weight})
		}
	}
	slices.SortFunc(out, func(a, b store.TenantWeight) int { return cmp.Compare(a.Tenant, b.Tenant) })
	return out, nil
}

// group returns tenant's group of the fair queue, made when it has none.
func (s *Store) group(tenant string) *tenantGroup {
	g := s.groups[tenant]
	if g == nil {
		g = &tenantGroup{id: s.nextGroup, weight: 1}
		s.nextGroup++
		s.groups[tenant] = g
	}
	return g
}

// straightIn lets a rate-limited task that became ready into the fair
// queue at once, as pgstore's Enqueue does, when no task waits for its
// bucket and the bucket (made full for its first task, once its limit is
// put) has room for the task's units beyond those its entries there hold.
// It reports whether it did.
func (s *Store) straightIn(r *run, ti int, b bucketKey, units int) bool {
	l, ok := s.limits[b.limit]
	if !ok {
		return false // the admission after the limit comes lets it in
	}
	bk := s.bucket(b)
	if slices.ContainsFunc(bk.waiting, waitEntry.live) {
		return false
	}
	if room := refill(bk, l, s.now()) - float64(bk.held()); float64(units) > room {
		return false
	}
	bk.admitted = append(bk.admitted, waitEntry{run: r, task: ti, priority: r.priority, units: units})
	s.place(r, ti)
	return true
}

// bucket returns bucket b, made full (at its limit's burst) when it has
// none yet.
func (s *Store) bucket(b bucketKey) *bucket {
	bk := s.buckets[b]
	if bk == nil {
		bk = &bucket{tokens: float64(s.limits[b.limit].Burst), updated: s.now()}
		s.buckets[b] = bk
	}
	return bk
}

// park puts a rate-limited task that became ready in its bucket's
// waiting list, and makes the bucket due a look now unless it is due
// already.
func (s *Store) park(r *run, ti int, b bucketKey, units int) {
	bk := s.bucket(b)
	s.waitSeq++
	e := waitEntry{run: r, task: ti, priority: r.priority, seq: s.waitSeq, units: units}
	i, _ := slices.BinarySearchFunc(bk.waiting, e, waitOrder)
	bk.waiting = slices.Insert(bk.waiting, i, e)
	if bk.wake.IsZero() {
		bk.wake = s.now()
	}
	s.enqueued = true // a worker that hears of it looks at its timers
}

// waitOrder orders a bucket's waiting tasks: higher priority first, then
// as they came.
func waitOrder(a, b waitEntry) int {
	if a.priority != b.priority {
		return cmp.Compare(b.priority, a.priority)
	}
	return cmp.Compare(a.seq, b.seq)
}

// refill returns the tokens of bk, of limit l, at now.
func refill(bk *bucket, l store.RateLimit, now time.Time) float64 {
	gained := max(now.Sub(bk.updated).Seconds(), 0) * l.Rate
	return min(float64(l.Burst), bk.tokens+gained)
}

// held returns the units that bk's entries in the fair queue hold,
// dropping those no longer queued.
func (bk *bucket) held() int {
	bk.admitted = slices.DeleteFunc(bk.admitted, func(e waitEntry) bool {
		t := e.run.tasks[e.task]
		return !e.live() || t.queueID < 0
	})
	n := 0
	for _, e := range bk.admitted {
		n += e.units
	}
	return n
}

// spend takes the units of a claimed rate-limited task from its bucket.
func (s *Store) spend(r *run, ti int, now time.Time) {
	b, units, ok := r.rateOf(ti)
	if !ok {
		return
	}
	bk := s.buckets[b]
	if bk == nil {
		return
	}
	bk.tokens = refill(bk, s.limits[b.limit], now) - float64(units)
	bk.updated = now
	bk.admitted = slices.DeleteFunc(bk.admitted, func(e waitEntry) bool { return e.run == r && e.task == ti })
}

// admitDue lets the waiting tasks of the buckets due a look into the fair
// queue, as many as each has tokens for beyond those its entries there
// hold, and sets each one's next look. It returns how many went in.
func (s *Store) admitDue(now time.Time) int {
	admitted := 0
	for b, bk := range s.buckets {
		if bk.wake.IsZero() || bk.wake.After(now) {
			continue
		}
		l := s.limits[b.limit]
		room := refill(bk, l, now) - float64(bk.held())
		i := 0
		for ; i < len(bk.waiting); i++ {
			e := bk.waiting[i]
			if !e.live() {
				continue
			}
			if float64(e.units) > room {
				break
			}
			room -= float64(e.units)
			bk.admitted = append(bk.admitted, e)
			s.place(e.run, e.task)
			admitted++
		}
		bk.waiting = slices.Delete(bk.waiting, 0, i)
		bk.wake = time.Time{}
		if len(bk.waiting) > 0 {
			bk.wake = now.Add(max(l.NextToken(room, bk.waiting[0].units), time.Millisecond))
		}
	}
	return admitted
}

// nextWake returns the earliest look due at a bucket, if any.
func (s *Store) nextWake() (time.Time, bool) {
	var next time.Time
	for _, bk := range s.buckets {
		if !bk.wake.IsZero() && (next.IsZero() || bk.wake.Before(next)) {
			next = bk.wake
		}
	}
	return next, !next.IsZero()
}

// rateWait says why task ti of r waits for a rate limit, or "" when it
// does not.
func (s *Store) rateWait(r *run, ti int, now time.Time) string {
	b, units, ok := r.rateOf(ti)
	if !ok {
		return ""
	}
	bk := s.buckets[b]
	if bk == nil {
		return ""
	}
	for i, e := range bk.waiting {
		if e.run == r && e.task == ti {
			ahead := 0
			for _, a := range bk.waiting[:i] {
				if a.live() {
					ahead++
				}
			}
			l := s.limits[b.limit]
			return store.RateWait(l, b.key, refill(bk, l, now)-float64(bk.held()), ahead, units)
		}
	}
	return ""
}

// betterEntry returns the entry a claim should hand head's place to (a
// place of head's tenant): the tenant's live entry of the highest
// priority above head's, of a signature served (in queues), the oldest of
// those, with its queue; or head itself and nil.
func (s *Store) betterEntry(head queueEntry, queues map[*readyQueue]bool) (queueEntry, *readyQueue) {
	g := s.groups[head.run.rec.Tenant]
	if g == nil || len(g.prio) == 0 {
		return head, nil
	}
	g.prio = slices.DeleteFunc(g.prio, func(e queueEntry) bool { return !e.live() })
	best, bestQ := head, (*readyQueue)(nil)
	for _, e := range g.prio {
		q := s.queues[e.run.spec(e.task).Signature]
		if !queues[q] || e.run == head.run && e.task == head.task {
			continue
		}
		if p, bp := e.run.priority, best.run.priority; p > bp || p == bp && bestQ != nil && e.id < best.id {
			best, bestQ = e, q
		}
	}
	return best, bestQ
}

// removeEntry takes e out of q.
func removeEntry(q *readyQueue, e queueEntry) {
	for i, x := range *q {
		if x.run == e.run && x.task == e.task && x.id == e.id {
			heap.Remove(q, i)
			return
		}
	}
}
