package shardstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
)

// leadState is this store's part in each shard's election.
//
// Each shard elects its own leader (its store's Elector), so the duties of
// a shard (rescuing its expired leases, reporting its unserved tasks,
// pruning its history) are done by one process whatever happens to the
// others, and one shard down costs only its own housekeeping. The sharded
// store is one Elector to the engine: it leads when it leads any shard, and
// its duties then run on the shards it leads.
type leadState struct {
	mu      sync.Mutex
	elected bool   // Lead was called: duties go to the shards led only
	leads   []bool // by shard
	name    string // the worker NameLeader named, for shards led later
}

func (l *leadState) init(n int) { l.leads = make([]bool, n) }

// Lead tries to lead every shard (at once) for lease, and reports whether
// it leads any. A shard whose store elects no leader is always led. A
// shard led anew is told the worker's name, when NameLeader gave one.
func (s *Store) Lead(ctx context.Context, lease time.Duration) (bool, error) {
	led := make([]bool, len(s.shards))
	failed := 0
	var mu sync.Mutex
	var errs []error
	s.each(ctx, func(ctx context.Context, i int, st store.Store) {
		el, ok := st.(store.Elector)
		if !ok {
			led[i] = true
			return
		}
		ok, err := el.Lead(ctx, lease)
		if err != nil {
			s.report(i, "lead", err)
			mu.Lock()
			failed++
			errs = append(errs, s.shardErr(i, "lead", err))
			mu.Unlock()
			return
		}
		led[i] = ok
	})
	s.lead.mu.Lock()
	s.lead.elected = true
	var fresh []int
	for i, ok := range led {
		if ok && !s.lead.leads[i] {
			fresh = append(fresh, i)
		}
		s.lead.leads[i] = ok
	}
	name := s.lead.name
	s.lead.mu.Unlock()
	if name != "" {
		for _, i := range fresh {
			if el, ok := s.shards[i].Store.(store.Elector); ok {
				if err := el.NameLeader(ctx, name); err != nil {
					s.report(i, "name the leader", err)
				}
			}
		}
	}
	if failed == len(s.shards) {
		return false, errors.Join(errs...)
	}
	for _, ok := range led {
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// Resign gives up the lead of every shard.
func (s *Store) Resign(ctx context.Context) error {
	s.lead.mu.Lock()
	clear(s.lead.leads)
	s.lead.mu.Unlock()
	return s.all(ctx, "resign", func(ctx context.Context, st store.Store) error {
		if el, ok := st.(store.Elector); ok {
			return el.Resign(ctx)
		}
		return nil
	})
}

// NameLeader names worker the leader of the shards this store leads, and
// of those it comes to lead.
func (s *Store) NameLeader(ctx context.Context, worker string) error {
	s.lead.mu.Lock()
	s.lead.name = worker
	s.lead.mu.Unlock()
	var errs []error
	for _, i := range s.dutyShards() {
		if el, ok := s.shards[i].Store.(store.Elector); ok {
			if err := el.NameLeader(ctx, worker); err != nil {
				errs = append(errs, s.shardErr(i, "name the leader", err))
			}
		}
	}
	return errors.Join(errs...)
}

// dutyShards returns the shards whose duties this store does: those it
// leads, or all of them when it never called Lead (a store used without
// an engine, or whose caller elects no leader).
func (s *Store) dutyShards() []int {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	var out []int
	for i := range s.shards {
		if !s.lead.elected || s.lead.leads[i] {
			out = append(out, i)
		}
	}
	return out
}

// duty runs a leader's duty on the shards this store leads, at once, and
// sums what they did. A shard that lost its lead (store.ErrNotLeader) is
// no longer led; the error wraps ErrNotLeader only when every shard did.
func (s *Store) duty(ctx context.Context, what string, fn func(ctx context.Context, st store.Store) (int, error)) (int, error) {
	idx := s.dutyShards()
	if len(idx) == 0 {
		return 0, store.ErrNotLeader
	}
	var mu sync.Mutex
	n, lost := 0, 0
	var errs []error
	s.eachOf(ctx, idx, func(ctx context.Context, i int, st store.Store) {
		k, err := fn(ctx, st)
		mu.Lock()
		defer mu.Unlock()
		n += k
		switch {
		case errors.Is(err, store.ErrNotLeader):
			lost++
			s.lead.mu.Lock()
			s.lead.leads[i] = false
			s.lead.mu.Unlock()
		case err != nil:
			s.report(i, what, err)
			errs = append(errs, s.shardErr(i, what, err))
		}
	})
	if lost == len(idx) {
		return n, store.ErrNotLeader
	}
	if len(errs)+lost == len(idx) && len(errs) > 0 {
		return n, errors.Join(errs...)
	}
	return n, nil
}

// RescueExpired rescues up to limit expired tasks on each shard this store
// leads.
func (s *Store) RescueExpired(ctx context.Context, limit int) (int, error) {
	n, err := s.duty(ctx, "rescue expired tasks", func(ctx context.Context, st store.Store) (int, error) { return st.RescueExpired(ctx, limit) })
	if n > 0 {
		for _, i := range s.dutyShards() {
			s.busy(i)
		}
	}
	return n, err
}

// ReportUnserved reports unserved tasks on each shard this store leads.
func (s *Store) ReportUnserved(ctx context.Context, grace time.Duration, limit int) (int, error) {
	return s.duty(ctx, "report unserved tasks", func(ctx context.Context, st store.Store) (int, error) {
		return st.ReportUnserved(ctx, grace, limit)
	})
}

// PruneRuns prunes up to limit runs on each shard this store leads.
func (s *Store) PruneRuns(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	return s.duty(ctx, "prune runs", func(ctx context.Context, st store.Store) (int, error) { return st.PruneRuns(ctx, cutoff, limit) })
}
