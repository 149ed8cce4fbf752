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
// store.ErrNotRetryable.
func (e *Engine) Retry(ctx context.Context, id dag.RunID, r store.Retry) (store.RetryResult, error) {
	res, err := e.store.RetryRun(ctx, id, r)
	if err != nil {
		return store.RetryResult{}, fmt.Errorf("retry: %w", err)
	}
	return res, nil
}
