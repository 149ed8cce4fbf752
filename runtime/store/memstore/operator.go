package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// matches reports whether r passes f's filters but its statuses (and
// cursor).
func matches(r *store.Run, f *store.RunFilter) bool {
	return (f.Workflow == "" || r.Workflow == f.Workflow) &&
		(f.Tenant == "" || r.Tenant == f.Tenant) &&
		(f.CreatedFrom.IsZero() || !r.CreatedAt.Before(f.CreatedFrom)) &&
		(f.CreatedTo.IsZero() || r.CreatedAt.Before(f.CreatedTo))
}

func matchesStatus(r *store.Run, f *store.RunFilter) bool {
	return len(f.Statuses) == 0 || slices.Contains(f.Statuses, r.Status)
}

// selectLocked returns the runs matching f but its cursor, oldest first,
// with s.mu held.
func (s *Store) selectLocked(f *store.RunFilter, statuses bool) []*run {
	var out []*run
	for _, r := range s.runs {
		if rec := r.record(); matches(&rec, f) && isChild(r, f.Children) && (!statuses || matchesStatus(&rec, f)) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *run) int { return compareIDs(a.rec.ID, b.rec.ID) })
	return out
}

func compareIDs(a, b dag.RunID) int { return slices.Compare(a[:], b[:]) }

// ListRuns implements store.Operator. It sorts every matching run: fine
// for the tests and demos memstore is for.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	if err := ctx.Err(); err != nil {
		return store.RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = store.DefaultPageSize
	case limit > store.MaxPageSize:
		limit = store.MaxPageSize
	}
	s.lock()
	defer s.unlock()
	runs := s.selectLocked(&f, true)
	var page store.RunPage
	for i := len(runs) - 1; i >= 0; i-- { // newest first
		rec := runs[i].record()
		r := &rec
		if !f.After.IsZero() && compareIDs(r.ID, f.After) >= 0 {
			continue
		}
		if len(page.Runs) == limit {
			page.Next = page.Runs[limit-1].ID
			break
		}
		sum := store.RunSummary{
			ID: r.ID, Workflow: r.Workflow, Tenant: r.Tenant, Status: r.Status,
			CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt,
		}
		if r.Status == store.RunFailed && r.Failure != nil {
			fl := *r.Failure
			sum.Failure = &fl
		}
		page.Runs = append(page.Runs, sum)
	}
	return page, nil
}

// CountRuns implements store.Operator.
func (s *Store) CountRuns(ctx context.Context, f store.RunFilter) (map[store.RunStatus]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	s.lock()
	defer s.unlock()
	counts := make(map[store.RunStatus]int)
	for _, r := range s.runs {
		if rec := r.record(); matches(&rec, &f) && isChild(r, f.Children) && matchesStatus(&rec, &f) {
			counts[r.Status]++
		}
	}
	return counts, nil
}

// CancelRuns implements store.Operator: one critical section, as CancelRun
// each run, oldest first.
func (s *Store) CancelRuns(ctx context.Context, f store.RunFilter, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("cancel runs: %w", err)
	}
	s.lock()
	defer s.unlock()
	now := s.now()
	n := 0
	for _, r := range s.selectLocked(&f, false) {
		if n >= limit {
			break
		}
		if r.Status.Terminal() {
			continue
		}
		s.cancelLocked(r, now)
		n++
	}
	return n, nil
}
