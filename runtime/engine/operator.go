package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/dagenhq/dagen/runtime/store"
)

// ErrNotSupported is returned by the operator methods (ListRuns, CountRuns,
// CancelRuns) when the engine's store does not implement store.Operator.
var ErrNotSupported = errors.New("not supported by the store")

// operator returns the engine's store as a store.Operator.
func (e *Engine) operator(op string) (store.Operator, error) {
	o, ok := e.store.(store.Operator)
	if !ok {
		return nil, fmt.Errorf("%s: store %T does not implement store.Operator: %w", op, e.store, ErrNotSupported)
	}
	return o, nil
}

// ListRuns returns a page of the runs matching f, newest first (see
// store.Operator.ListRuns): pass the page's Next as f.After for the next
// one. It fails with ErrNotSupported when the store has no operator
// queries.
func (e *Engine) ListRuns(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	o, err := e.operator("list runs")
	if err != nil {
		return store.RunPage{}, err
	}
	page, err := o.ListRuns(ctx, f)
	if err != nil {
		return store.RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	return page, nil
}

// CountRuns counts the runs matching f by status (f.After and f.Limit are
// ignored). It fails with ErrNotSupported when the store has no operator
// queries.
func (e *Engine) CountRuns(ctx context.Context, f store.RunFilter) (map[store.RunStatus]int, error) {
	o, err := e.operator("count runs")
	if err != nil {
		return nil, err
	}
	counts, err := o.CountRuns(ctx, f)
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
// once). It fails with ErrNotSupported when the store has no operator
// queries.
func (e *Engine) CancelRuns(ctx context.Context, f store.RunFilter, limit int) (int, error) {
	o, err := e.operator("cancel runs")
	if err != nil {
		return 0, err
	}
	n, err := o.CancelRuns(ctx, f, limit)
	if err != nil {
		return n, fmt.Errorf("cancel runs: %w", err)
	}
	return n, nil
}
