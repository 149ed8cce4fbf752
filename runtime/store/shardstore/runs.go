package shardstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// byTenant groups runs by the shard of their tenant, in the order of each
// shard's first run; it fails for a tenant whose logical shard is paused.
func (s *Store) byTenant(runs []store.NewRun) (order []int, groups map[int][]int, err error) {
	groups = make(map[int][]int)
	for k, r := range runs {
		// A bad tenant fails the call before any shard writes: the shards
		// would refuse it, but only after the shards before had created
		// their runs.
		if err := store.ValidTenant(r.Tenant); err != nil {
			return nil, nil, fmt.Errorf("create run %s: %w: %w", r.ID, store.ErrInvalidRun, err)
		}
		l := store.LogicalShard(r.Tenant)
		if s.paused[l] {
			return nil, nil, fmt.Errorf("shardstore: tenant %q (logical shard %d): %w", r.Tenant, l, ErrPaused)
		}
		i := s.logical[l]
		if _, ok := groups[i]; !ok {
			order = append(order, i)
		}
		groups[i] = append(groups[i], k)
	}
	return order, groups, nil
}

// checkNew fails with store.ErrRunExists when a run of a batch over
// several shards exists already, before any shard writes: a retried batch
// then creates nothing, as in one store. (Runs created by others between
// the check and the writes still fail only their own shard's part.)
func (s *Store) checkNew(ctx context.Context, runs []store.NewRun, order []int, groups map[int][]int) error {
	if len(order) < 2 {
		return nil
	}
	var mu sync.Mutex
	var errs []error
	s.eachOf(ctx, order, func(ctx context.Context, i int, st store.Store) {
		for _, k := range groups[i] {
			_, err := st.RunStatus(ctx, runs[k].ID)
			if isNotFound(err) {
				continue
			}
			if err == nil {
				err = fmt.Errorf("create run %s: %w", runs[k].ID, store.ErrRunExists)
			}
			mu.Lock()
			errs = append(errs, s.shardErr(i, "check the batch's runs are new", err))
			mu.Unlock()
			return
		}
	})
	return errors.Join(errs...)
}

// pick returns the runs at idx, copied.
func pick(runs []store.NewRun, idx []int) []store.NewRun {
	out := make([]store.NewRun, len(idx))
	for j, k := range idx {
		out[j] = runs[k]
	}
	return out
}

// CreateRuns creates each run on its tenant's shard: one CreateRuns a
// shard, so the runs of one shard are created together or not at all.
// Runs on several shards are not one unit: when a shard fails, the runs of
// the shards before it (in the order of their first run) are created and
// the others are not; the error names the shard. Triggering again with
// idempotency keys creates the missing runs and finds the others.
func (s *Store) CreateRuns(ctx context.Context, runs []store.NewRun) error {
	order, groups, err := s.byTenant(runs)
	if err != nil {
		return err
	}
	if err := s.checkNew(ctx, runs, order, groups); err != nil {
		return err
	}
	for _, i := range order {
		sub := pick(runs, groups[i])
		if err := s.shards[i].Store.CreateRuns(ctx, sub); err != nil {
			return s.shardErr(i, fmt.Sprintf("create %d runs", len(sub)), err)
		}
		for j, k := range groups[i] {
			runs[k].Existing = sub[j].Existing
			s.remember(runs[k].ID, i)
		}
		s.busy(i)
	}
	return nil
}

// StartRuns is CreateRuns that starts the runs' first steps here, as
// store.Starter says, shard by shard: the shards together start at most
// p.Limit tenants' roots. It returns the claimed tasks in run order.
func (s *Store) StartRuns(ctx context.Context, runs []store.NewRun, p store.ClaimParams) ([]store.ClaimedTask, error) {
	order, groups, err := s.byTenant(runs)
	if err != nil {
		return nil, err
	}
	if err := s.checkNew(ctx, runs, order, groups); err != nil {
		return nil, err
	}
	limits := startLimits(runs, p, s.tenantShard)
	var out []store.ClaimedTask
	for _, i := range order {
		sub := pick(runs, groups[i])
		q := p
		q.Limit = limits[i]
		got, err := s.shards[i].Store.StartRuns(ctx, sub, q)
		if err != nil {
			return out, s.shardErr(i, fmt.Sprintf("start %d runs", len(sub)), err)
		}
		for j, k := range groups[i] {
			runs[k].Existing = sub[j].Existing
			s.remember(runs[k].ID, i)
		}
		out = append(out, got...)
		s.busy(i)
	}
	pos := make(map[dag.RunID]int, len(runs))
	for k, r := range runs {
		pos[r.ID] = k
	}
	slices.SortStableFunc(out, func(a, b store.ClaimedTask) int { return cmp.Compare(pos[a.RunID], pos[b.RunID]) })
	return out, nil
}

// startLimits says how many tenants' roots each shard may start: of the
// first p.Limit tenants in run order that have a root p serves (the ones
// one store would look at), those of the shard.
func startLimits(runs []store.NewRun, p store.ClaimParams, shardOf func(string) int) map[int]int {
	limits := make(map[int]int)
	seen := make(map[string]bool)
	serves := p.Serving()
	n := 0
	for _, r := range runs {
		if n >= p.Limit {
			break
		}
		if seen[r.Tenant] {
			continue
		}
		for _, t := range r.Tasks {
			if len(t.Parents) == 0 && t.Kind != store.KindOnFailure && serves(t.Signature) {
				seen[r.Tenant] = true
				limits[shardOf(r.Tenant)]++
				n++
				break
			}
		}
	}
	return limits
}

// byRun groups results by the shard of their run, in the order of each
// shard's first result.
func (s *Store) byRun(ctx context.Context, results []store.TaskResult) (order []int, groups map[int][]int, err error) {
	groups = make(map[int][]int)
	for k, r := range results {
		i, err := s.locate(ctx, r.RunID)
		if errors.Is(err, store.ErrRunNotFound) {
			// The shard of its id answers for it (stale), as one store
			// answers for a run it does not know.
			i, err = s.logical[r.RunID.Shard()%store.LogicalShards], nil
		}
		if err != nil {
			return nil, nil, err
		}
		if _, ok := groups[i]; !ok {
			order = append(order, i)
		}
		groups[i] = append(groups[i], k)
	}
	return order, groups, nil
}

// CompleteTasks stores each result on its run's shard, the shards at
// once, one CompleteTasks a shard. When some shards fail and others do
// not, the results of the failed shards come back OutcomeStale, not
// applied: their attempts stay RUNNING on that shard, and once it is back
// they go to another attempt as results a worker lost do (Heartbeat
// releases attempts their worker no longer holds; a lease runs out), while
// the other shards' results, stored, free their workers. Only when every
// shard of the batch fails does CompleteTasks fail, and the caller retries
// the whole batch.
func (s *Store) CompleteTasks(ctx context.Context, results []store.TaskResult) ([]store.CompletionOutcome, error) {
	outs, _, err := s.complete(ctx, results, nil)
	return outs, err
}

// CompleteAndContinue is CompleteTasks that claims the steps the results
// made ready, shard by shard, at most p.Limit in all (store.Continuer).
func (s *Store) CompleteAndContinue(ctx context.Context, results []store.TaskResult, p store.ClaimParams) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	return s.complete(ctx, results, &p)
}

func (s *Store) complete(ctx context.Context, results []store.TaskResult, p *store.ClaimParams) ([]store.CompletionOutcome, []store.ClaimedTask, error) {
	order, groups, err := s.byRun(ctx, results)
	if err != nil {
		return nil, nil, err
	}
	outs := make([]store.CompletionOutcome, len(results))
	var next []store.ClaimedTask
	var mu sync.Mutex
	var errs []error
	// With a continuation, the limit is shared: shards go one after the
	// other. Without, at once.
	run := func(ctx context.Context, i int, st store.Store) {
		sub := make([]store.TaskResult, len(groups[i]))
		for j, k := range groups[i] {
			sub[j] = results[k]
		}
		var got []store.CompletionOutcome
		var claimed []store.ClaimedTask
		var err error
		if p != nil {
			q := *p
			mu.Lock()
			q.Limit = max(p.Limit-len(next), 0)
			mu.Unlock()
			got, claimed, err = st.CompleteAndContinue(ctx, sub, q)
		} else {
			got, err = st.CompleteTasks(ctx, sub)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			s.report(i, "complete tasks", err)
			errs = append(errs, s.shardErr(i, fmt.Sprintf("complete %d tasks", len(sub)), err))
			for _, k := range groups[i] {
				outs[k] = store.CompletionOutcome{Outcome: store.OutcomeStale}
			}
			return
		}
		enqueued := false
		for j, k := range groups[i] {
			outs[k] = got[j]
			enqueued = enqueued || got[j].Enqueued > 0
			if c := results[k].Child; c != nil && got[j].Outcome != store.OutcomeStale {
				s.remember(c.ID, i)
			}
		}
		for _, ct := range claimed {
			s.remember(ct.RunID, i)
		}
		next = append(next, claimed...)
		if enqueued {
			s.busy(i)
		}
	}
	if p != nil {
		for _, i := range order {
			run(ctx, i, s.shards[i].Store)
		}
	} else {
		s.eachOf(ctx, order, run)
	}
	if len(errs) == len(order) && len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return outs, next, nil
}

// FireTimers fires up to limit due timers on each shard, at once, and
// returns how many fired in all.
func (s *Store) FireTimers(ctx context.Context, limit int) (int, error) {
	ns, from, err := gather(ctx, s, "fire timers", nil, func(ctx context.Context, st store.Store) (int, error) { return st.FireTimers(ctx, limit) })
	for j, n := range ns {
		if n > 0 {
			s.busy(from[j])
		}
	}
	return sum(ns), err
}

func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}

// NextTimer returns the earliest pending wake time of every shard.
func (s *Store) NextTimer(ctx context.Context) (time.Time, bool, error) {
	type next struct {
		at time.Time
		ok bool
	}
	ns, _, err := gather(ctx, s, "read the next timer", nil, func(ctx context.Context, st store.Store) (next, error) {
		at, ok, err := st.NextTimer(ctx)
		return next{at, ok}, err
	})
	if err != nil {
		return time.Time{}, false, err
	}
	var best time.Time
	found := false
	for _, n := range ns {
		if n.ok && (!found || n.at.Before(best)) {
			best, found = n.at, true
		}
	}
	return best, found, nil
}

// CancelRun cancels a run on its shard.
func (s *Store) CancelRun(ctx context.Context, id dag.RunID) (bool, error) {
	return onRun(ctx, s, id, func(st store.Store) (bool, error) { return st.CancelRun(ctx, id) })
}

// GetRun reads a run from its shard.
func (s *Store) GetRun(ctx context.Context, id dag.RunID) (store.Run, error) {
	return onRun(ctx, s, id, func(st store.Store) (store.Run, error) { return st.GetRun(ctx, id) })
}

// ListTasks reads a run's tasks from its shard.
func (s *Store) ListTasks(ctx context.Context, id dag.RunID) ([]store.Task, error) {
	return onRun(ctx, s, id, func(st store.Store) ([]store.Task, error) { return st.ListTasks(ctx, id) })
}

// ListEvents reads a run's events from its shard.
func (s *Store) ListEvents(ctx context.Context, id dag.RunID) ([]store.Event, error) {
	return onRun(ctx, s, id, func(st store.Store) ([]store.Event, error) { return st.ListEvents(ctx, id) })
}

// ReadRun reads a run and its tasks from its shard.
func (s *Store) ReadRun(ctx context.Context, id dag.RunID) (store.Run, []store.Task, error) {
	type whole struct {
		run   store.Run
		tasks []store.Task
	}
	w, err := onRun(ctx, s, id, func(st store.Store) (whole, error) {
		r, ts, err := st.ReadRun(ctx, id)
		return whole{r, ts}, err
	})
	return w.run, w.tasks, err
}

// RunStatus reads a run's status from its shard.
func (s *Store) RunStatus(ctx context.Context, id dag.RunID) (store.RunStatus, error) {
	if i, ok := s.remembered(id); ok {
		return s.shards[i].Store.RunStatus(ctx, id)
	}
	return onRun(ctx, s, id, func(st store.Store) (store.RunStatus, error) { return st.RunStatus(ctx, id) })
}

// Heartbeat beats on every shard at once, each with the held attempts of
// its runs (an attempt of a run whose shard is not known goes to all), so
// that the worker is alive wherever it holds tasks. A shard that fails is
// passed over unless all do; the cancelled runs of all are returned.
func (s *Store) Heartbeat(ctx context.Context, worker string, ttl time.Duration, held []store.HeldAttempt) ([]dag.RunID, error) {
	per := make([][]store.HeldAttempt, len(s.shards))
	for _, h := range held {
		i, err := s.locate(ctx, h.RunID)
		switch {
		case isNotFound(err):
			// Gone: the shard of its id reports it, as one store would.
			i = s.logical[h.RunID.Shard()%store.LogicalShards]
		case err != nil:
			continue // its shard does not answer: it beats there later
		}
		per[i] = append(per[i], h)
	}
	var mu sync.Mutex
	var cancelled []dag.RunID
	var errs []error
	s.each(ctx, func(ctx context.Context, i int, st store.Store) {
		got, err := st.Heartbeat(ctx, worker, ttl, per[i])
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			s.report(i, "heartbeat", err)
			errs = append(errs, s.shardErr(i, "heartbeat", err))
			return
		}
		cancelled = append(cancelled, got...)
	})
	if len(errs) == len(s.shards) {
		return nil, errors.Join(errs...)
	}
	return cancelled, nil
}

// RetireWorker retires worker on every shard and returns how many tasks
// it released in all. Every shard must answer: a shard that fails keeps
// the worker's tasks until their leases run out.
func (s *Store) RetireWorker(ctx context.Context, worker string, release bool) (int, error) {
	var mu sync.Mutex
	n := 0
	err := s.all(ctx, "retire worker "+worker, func(ctx context.Context, st store.Store) error {
		k, err := st.RetireWorker(ctx, worker, release)
		mu.Lock()
		n += k
		mu.Unlock()
		return err
	})
	if n > 0 {
		for i := range s.shards {
			s.busy(i)
		}
	}
	return n, err
}

// Subscribe merges every shard's notifications of work into one channel,
// and notes the shard each came from, whose claims then resume (see
// ClaimTasks). A shard that cannot subscribe is passed over (its workers
// find its work by polling) unless all fail.
func (s *Store) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	var errs []error
	subscribed := 0
	for i, sh := range s.shards {
		ch, err := sh.Store.Subscribe(ctx)
		if err != nil {
			s.report(i, "subscribe", err)
			errs = append(errs, s.shardErr(i, "subscribe", err))
			continue
		}
		subscribed++
		go func() {
			for range ch {
				s.busy(i)
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}()
	}
	if subscribed == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// SubscribeCancels merges every shard's cancellations into one channel.
func (s *Store) SubscribeCancels(ctx context.Context) (<-chan dag.RunID, error) {
	out := make(chan dag.RunID, 64)
	var errs []error
	subscribed := 0
	for i, sh := range s.shards {
		ch, err := sh.Store.SubscribeCancels(ctx)
		if err != nil {
			s.report(i, "subscribe to cancellations", err)
			errs = append(errs, s.shardErr(i, "subscribe to cancellations", err))
			continue
		}
		subscribed++
		go func() {
			for id := range ch {
				select {
				case out <- id:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	if subscribed == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
