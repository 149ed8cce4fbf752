package shardstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// every calls fn on every shard at once (or on the shard of tenant, when
// it is not empty) and returns all answers, by shard; any failure fails
// the call, naming the shard: an operator's list or count that left out a
// shard would lie.
func every[T any](ctx context.Context, s *Store, what, tenant string, fn func(ctx context.Context, st store.Store) (T, error)) ([]T, error) {
	var idx []int
	if tenant != "" {
		idx = []int{s.tenantShard(tenant)}
	}
	var mu sync.Mutex
	outs := make([]T, len(s.shards))
	var first error
	s.eachOf(ctx, idx, func(ctx context.Context, i int, st store.Store) {
		out, err := fn(ctx, st)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && first == nil {
			first = s.shardErr(i, what, err)
		}
		outs[i] = out
	})
	if first != nil {
		return nil, first
	}
	return outs, nil
}

func newerFirst(a, b dag.RunID) int { return bytes.Compare(b[:], a[:]) }

// ListRuns lists the runs of every shard (of the tenant's alone when the
// filter names one), newest first: each shard's page after f.After,
// merged by run id (ids are time ordered), cut to the limit. The cursor
// is the last run id of the page, as in one store, so every shard's next
// page starts after it.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = store.DefaultPageSize
	}
	limit = min(limit, store.MaxPageSize)
	f.Limit = limit
	pages, err := every(ctx, s, "list runs", f.Tenant, func(ctx context.Context, st store.Store) (store.RunPage, error) { return st.ListRuns(ctx, f) })
	if err != nil {
		return store.RunPage{}, err
	}
	var runs []store.RunSummary
	more := false
	for _, p := range pages {
		runs = append(runs, p.Runs...)
		more = more || !p.Next.IsZero()
	}
	slices.SortFunc(runs, func(a, b store.RunSummary) int { return newerFirst(a.ID, b.ID) })
	if len(runs) > limit {
		runs, more = runs[:limit], true
	}
	page := store.RunPage{Runs: runs}
	if more && len(runs) > 0 {
		page.Next = runs[len(runs)-1].ID
	}
	return page, nil
}

// CountRuns adds up every shard's counts.
func (s *Store) CountRuns(ctx context.Context, f store.RunFilter) (map[store.RunStatus]int, error) {
	counts, err := every(ctx, s, "count runs", f.Tenant, func(ctx context.Context, st store.Store) (map[store.RunStatus]int, error) {
		return st.CountRuns(ctx, f)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[store.RunStatus]int)
	for _, c := range counts {
		for k, v := range c {
			out[k] += v
		}
	}
	return out, nil
}

// CancelRuns cancels up to limit matching runs, shard after shard.
func (s *Store) CancelRuns(ctx context.Context, f store.RunFilter, limit int) (int, error) {
	n := 0
	for i, sh := range s.shards {
		if f.Tenant != "" && i != s.tenantShard(f.Tenant) {
			continue
		}
		if n >= limit {
			break
		}
		k, err := sh.Store.CancelRuns(ctx, f, limit-n)
		n += k
		if err != nil {
			return n, s.shardErr(i, "cancel runs", err)
		}
	}
	return n, nil
}

// ListChildren lists a run's children, on its shard (where they are).
func (s *Store) ListChildren(ctx context.Context, id dag.RunID) ([]store.ChildRun, error) {
	return onRun(ctx, s, id, func(st store.Store) ([]store.ChildRun, error) { return st.ListChildren(ctx, id) })
}

// RetryRun retries a run on its shard.
func (s *Store) RetryRun(ctx context.Context, id dag.RunID, r store.Retry) (store.RetryResult, error) {
	res, err := onRun(ctx, s, id, func(st store.Store) (store.RetryResult, error) { return st.RetryRun(ctx, id, r) })
	if err == nil && len(res.Enqueued) > 0 {
		if i, ok := s.remembered(id); ok {
			s.busy(i)
		}
	}
	return res, err
}

// Workers merges the workers of every shard (a worker beats on each): by
// id, alive and leading where it is on any shard, with its latest
// heartbeat.
func (s *Store) Workers(ctx context.Context) ([]store.WorkerInfo, error) {
	lists, err := every(ctx, s, "list workers", "", func(ctx context.Context, st store.Store) ([]store.WorkerInfo, error) { return st.Workers(ctx) })
	if err != nil {
		return nil, err
	}
	byID := make(map[string]store.WorkerInfo)
	for _, l := range lists {
		for _, w := range l {
			have, ok := byID[w.ID]
			if !ok {
				byID[w.ID] = w
				continue
			}
			if w.HeartbeatAt.After(have.HeartbeatAt) {
				have.HeartbeatAt, have.Signatures, have.Concurrency = w.HeartbeatAt, w.Signatures, w.Concurrency
			}
			if w.AliveUntil.After(have.AliveUntil) {
				have.AliveUntil = w.AliveUntil
			}
			have.Alive = have.Alive || w.Alive
			have.Leader = have.Leader || w.Leader
			byID[w.ID] = have
		}
	}
	out := make([]store.WorkerInfo, 0, len(byID))
	for _, w := range byID {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b store.WorkerInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// Backlog merges every shard's backlog, by tenant then workflow.
func (s *Store) Backlog(ctx context.Context) ([]store.BacklogEntry, error) {
	lists, err := every(ctx, s, "read the backlog", "", func(ctx context.Context, st store.Store) ([]store.BacklogEntry, error) { return st.Backlog(ctx) })
	if err != nil {
		return nil, err
	}
	type key struct{ tenant, workflow string }
	byKey := make(map[key]store.BacklogEntry)
	for _, l := range lists {
		for _, e := range l {
			k := key{e.Tenant, e.Workflow}
			have := byKey[k]
			have.Tenant, have.Workflow = e.Tenant, e.Workflow
			have.Queued += e.Queued
			have.Running += e.Running
			have.Sleeping += e.Sleeping
			have.Backoff += e.Backoff
			have.OldestQueued = max(have.OldestQueued, e.OldestQueued)
			byKey[k] = have
		}
	}
	out := make([]store.BacklogEntry, 0, len(byKey))
	for _, e := range byKey {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b store.BacklogEntry) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Workflow, b.Workflow))
	})
	return out, nil
}

// QueuePlaces says where a run's steps stand in its shard's fair queue
// (the counts are of that shard's queue).
func (s *Store) QueuePlaces(ctx context.Context, id dag.RunID, steps []string) (map[string]store.QueuePlace, error) {
	i, err := s.locate(ctx, id)
	if err != nil {
		return map[string]store.QueuePlace{}, ignoreNotFound(err)
	}
	return s.shards[i].Store.QueuePlaces(ctx, id, steps)
}

// Unserved returns a run's unserved tasks, from its shard.
func (s *Store) Unserved(ctx context.Context, id dag.RunID) ([]store.UnservedTask, error) {
	return onRun(ctx, s, id, func(st store.Store) ([]store.UnservedTask, error) { return st.Unserved(ctx, id) })
}

func ignoreNotFound(err error) error {
	if isNotFound(err) {
		return nil
	}
	return err
}

// RecordSignatures records the signatures on every shard: a shard's runs
// are read back against them.
func (s *Store) RecordSignatures(ctx context.Context, infos []store.SignatureInfo) error {
	return s.all(ctx, "record signatures", func(ctx context.Context, st store.Store) error { return st.RecordSignatures(ctx, infos) })
}

// Serve records what worker serves on every shard; a shard that fails is
// passed over unless all do (it learns at the next heartbeat's Serve).
func (s *Store) Serve(ctx context.Context, worker string, sv store.Serving) error {
	_, _, err := gather(ctx, s, "record what the worker serves", nil, func(ctx context.Context, st store.Store) (struct{}, error) {
		return struct{}{}, st.Serve(ctx, worker, sv)
	})
	return err
}

// SignatureInfos reads the descriptions from every shard, each signature
// once, in the order of the first shard that has it.
func (s *Store) SignatureInfos(ctx context.Context, signatures []string) ([]store.SignatureInfo, error) {
	lists, err := every(ctx, s, "read signatures", "", func(ctx context.Context, st store.Store) ([]store.SignatureInfo, error) {
		return st.SignatureInfos(ctx, signatures)
	})
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool)
	var out []store.SignatureInfo
	for _, l := range lists {
		for _, info := range l {
			if !seen[info.Signature] {
				seen[info.Signature] = true
				out = append(out, info)
			}
		}
	}
	return out, nil
}

// InFlight adds up every shard's report: runs and strandings summed, the
// samples merged in id order.
func (s *Store) InFlight(ctx context.Context, served []string, sample int) (store.InFlightReport, error) {
	reports, err := every(ctx, s, "read the runs in flight", "", func(ctx context.Context, st store.Store) (store.InFlightReport, error) {
		return st.InFlight(ctx, served, sample)
	})
	if err != nil {
		return store.InFlightReport{}, err
	}
	sigs := make(map[string]store.InFlight)
	wfs := make(map[string]store.InFlightRuns)
	for _, r := range reports {
		for _, x := range r.Signatures {
			have, ok := sigs[x.Signature]
			if !ok {
				sigs[x.Signature] = x
				continue
			}
			have.Runs += x.Runs
			have.Sample = mergeSample(have.Sample, x.Sample, sample)
			if have.Info == nil {
				have.Info = x.Info
			}
			sigs[x.Signature] = have
		}
		for _, x := range r.Workflows {
			have, ok := wfs[x.Workflow]
			if !ok {
				wfs[x.Workflow] = x
				continue
			}
			have.Runs += x.Runs
			have.Stranded += x.Stranded
			have.Sample = mergeSample(have.Sample, x.Sample, sample)
			wfs[x.Workflow] = have
		}
	}
	var out store.InFlightReport
	for _, x := range sigs {
		out.Signatures = append(out.Signatures, x)
	}
	for _, x := range wfs {
		out.Workflows = append(out.Workflows, x)
	}
	slices.SortFunc(out.Signatures, func(a, b store.InFlight) int {
		return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Step, b.Step), cmp.Compare(a.Signature, b.Signature))
	})
	slices.SortFunc(out.Workflows, func(a, b store.InFlightRuns) int { return cmp.Compare(a.Workflow, b.Workflow) })
	return out, nil
}

func mergeSample(a, b []dag.RunID, n int) []dag.RunID {
	out := append(slices.Clone(a), b...)
	slices.SortFunc(out, func(x, y dag.RunID) int { return bytes.Compare(x[:], y[:]) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// PutRateLimits puts the limits on every shard. Each shard keeps its own
// buckets: a limit holds per shard (see the package doc).
func (s *Store) PutRateLimits(ctx context.Context, limits []store.RateLimit) error {
	return s.all(ctx, "put rate limits", func(ctx context.Context, st store.Store) error { return st.PutRateLimits(ctx, limits) })
}

// SetTenantWeight sets the weight on the tenant's shard, whose fair queue
// it weighs in.
func (s *Store) SetTenantWeight(ctx context.Context, tenant string, weight int) error {
	i := s.tenantShard(tenant)
	if err := s.shards[i].Store.SetTenantWeight(ctx, tenant, weight); err != nil {
		return s.shardErr(i, "set tenant weight", err)
	}
	return nil
}

// TenantWeights merges every shard's weights, by tenant.
func (s *Store) TenantWeights(ctx context.Context) ([]store.TenantWeight, error) {
	lists, err := every(ctx, s, "read tenant weights", "", func(ctx context.Context, st store.Store) ([]store.TenantWeight, error) { return st.TenantWeights(ctx) })
	if err != nil {
		return nil, err
	}
	var out []store.TenantWeight
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.SortFunc(out, func(a, b store.TenantWeight) int { return cmp.Compare(a.Tenant, b.Tenant) })
	return out, nil
}

// ---- triggers ----

// Now returns the clock of the first shard that answers: schedules' slots
// are read on it, and each shard checks its own when it fires them.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var errs error
	for i, sh := range s.shards {
		now, err := sh.Store.Now(ctx)
		if err == nil {
			return now, nil
		}
		errs = s.shardErr(i, "read the clock", err)
	}
	return time.Time{}, errs
}

// RegisterSchedules gives every shard the declared schedules of its
// tenants (none to the others, which delete any they had).
func (s *Store) RegisterSchedules(ctx context.Context, workflow string, declared []store.Schedule) error {
	per := make([][]store.Schedule, len(s.shards))
	for _, sc := range declared {
		i := s.tenantShard(sc.Tenant)
		per[i] = append(per[i], sc)
	}
	var mu sync.Mutex
	var first error
	s.each(ctx, func(ctx context.Context, i int, st store.Store) {
		if err := st.RegisterSchedules(ctx, workflow, per[i]); err != nil {
			mu.Lock()
			if first == nil {
				first = s.shardErr(i, "register schedules of "+workflow, err)
			}
			mu.Unlock()
		}
	})
	return first
}

// PutSchedule puts the schedule on its tenant's shard, where its runs go.
func (s *Store) PutSchedule(ctx context.Context, sc store.Schedule) error {
	return s.shards[s.tenantShard(sc.Tenant)].Store.PutSchedule(ctx, sc)
}

// ListSchedules merges every shard's schedules (the tenant's alone when
// one is named), by workflow, tenant and name.
func (s *Store) ListSchedules(ctx context.Context, workflow, tenant string) ([]store.Schedule, error) {
	lists, err := every(ctx, s, "list schedules", tenant, func(ctx context.Context, st store.Store) ([]store.Schedule, error) {
		return st.ListSchedules(ctx, workflow, tenant)
	})
	if err != nil {
		return nil, err
	}
	var out []store.Schedule
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.SortFunc(out, func(a, b store.Schedule) int {
		return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// PauseSchedule pauses or resumes a schedule on its tenant's shard.
func (s *Store) PauseSchedule(ctx context.Context, ref store.ScheduleRef, paused bool, next time.Time) error {
	return s.shards[s.tenantShard(ref.Tenant)].Store.PauseSchedule(ctx, ref, paused, next)
}

// DeleteSchedule deletes a schedule on its tenant's shard.
func (s *Store) DeleteSchedule(ctx context.Context, ref store.ScheduleRef) error {
	return s.shards[s.tenantShard(ref.Tenant)].Store.DeleteSchedule(ctx, ref)
}

// DueSchedules merges every shard's due schedules, earliest first, and
// returns the latest of the shards' clocks. A shard that fails is passed
// over unless all do.
func (s *Store) DueSchedules(ctx context.Context, workflows []string, limit int) ([]store.Schedule, time.Time, error) {
	type due struct {
		list []store.Schedule
		now  time.Time
	}
	dues, _, err := gather(ctx, s, "read due schedules", nil, func(ctx context.Context, st store.Store) (due, error) {
		l, now, err := st.DueSchedules(ctx, workflows, limit)
		return due{l, now}, err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	var out []store.Schedule
	var now time.Time
	for _, d := range dues {
		out = append(out, d.list...)
		if d.now.After(now) {
			now = d.now
		}
	}
	slices.SortStableFunc(out, func(a, b store.Schedule) int { return a.NextAt.Compare(b.NextAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, now, nil
}

// FireSchedule fires a schedule on its tenant's shard, which creates its
// runs there.
func (s *Store) FireSchedule(ctx context.Context, f store.ScheduleFiring) (bool, error) {
	l := store.LogicalShard(f.Tenant)
	if s.paused[l] && len(f.Runs) > 0 {
		return false, fmt.Errorf("shardstore: schedule %s: %w", f.ScheduleRef, ErrPaused)
	}
	i := s.logical[l]
	ok, err := s.shards[i].Store.FireSchedule(ctx, f)
	if ok {
		for _, r := range f.Runs {
			s.remember(r.ID, i)
		}
		s.busy(i)
	}
	return ok, err
}

// SendSignal sends a signal to a run on its shard.
func (s *Store) SendSignal(ctx context.Context, id dag.RunID, step string, payload []byte) (bool, error) {
	i, err := s.locate(ctx, id)
	if err != nil {
		return false, err
	}
	ok, err := s.shards[i].Store.SendSignal(ctx, id, step, payload)
	if err == nil {
		s.busy(i)
	}
	return ok, err
}
