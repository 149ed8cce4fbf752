package engine

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// Retry retries a finished run as store.Retrier.RetryRun does: the tasks
// r.Mode chooses are reset and run again (their retries start over), the
// others keep their outputs, and the run is RUNNING again, so Wait waits for
// its new end. A run that may not be retried is an error wrapping
// store.ErrNotRetryable. It fails with ErrNotSupported when the store does
// not implement store.Retrier.
func (e *Engine) Retry(ctx context.Context, id dag.RunID, r store.Retry) (store.RetryResult, error) {
	rt, ok := e.store.(store.Retrier)
	if !ok {
		return store.RetryResult{}, fmt.Errorf("retry run %s: store %T does not implement store.Retrier: %w", id, e.store, ErrNotSupported)
	}
	res, err := rt.RetryRun(ctx, id, r)
	if err != nil {
		return store.RetryResult{}, fmt.Errorf("retry: %w", err)
	}
	return res, nil
}
