package engine

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/store"
)

// ListRuns returns a page of the runs matching f, newest first (see
// store.Operator.ListRuns): pass the page's Next as f.After for the next
// one.
func (e *Engine) ListRuns(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	page, err := e.store.ListRuns(ctx, f)
	if err != nil {
		return store.RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	return page, nil
}

// CountRuns counts the runs matching f by status (f.After and f.Limit are
// ignored).
func (e *Engine) CountRuns(ctx context.Context, f store.RunFilter) (map[store.RunStatus]int, error) {
	counts, err := e.store.CountRuns(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	return counts, nil
}

// CancelRuns cancels up to limit RUNNING runs matching f (whatever
// f.Statuses says), oldest first, and returns how many it cancelled. Steps
// of those runs executing on started engines, this one included, see their
// ctx done when the store's cancel notification or their engine's next
// heartbeat reaches them (see Cancel, which also cancels local steps at
// once).
func (e *Engine) CancelRuns(ctx context.Context, f store.RunFilter, limit int) (int, error) {
	n, err := e.store.CancelRuns(ctx, f, limit)
	if err != nil {
		return n, fmt.Errorf("cancel runs: %w", err)
	}
	return n, nil
}

// SetTenantWeight gives tenant a weight in the fair queue, from 1 (every
// tenant's default) to store.MaxWeight: under backlog, a tenant of weight
// 3 has three tasks claimed for each one of a tenant of weight 1, and no
// tenant with work waits past a turn of the others. The weight is stored:
// every worker of the store follows it from its next claim.
func (e *Engine) SetTenantWeight(ctx context.Context, tenant string, weight int) error {
	return e.store.SetTenantWeight(ctx, tenant, weight)
}

// TenantWeights lists the tenants whose weight is not 1, by tenant.
func (e *Engine) TenantWeights(ctx context.Context) ([]store.TenantWeight, error) {
	return e.store.TenantWeights(ctx)
}
