package engine

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/store"
)

// Workers returns the workers sharing the engine's store: alive or not,
// their last heartbeat and the task signatures they serve.
func (e *Engine) Workers(ctx context.Context) ([]store.WorkerInfo, error) {
	ws, err := e.store.Workers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return ws, nil
}

// Backlog counts the unfinished tasks of running runs per tenant and
// workflow: queued, running, sleeping and waiting out a retry delay.
func (e *Engine) Backlog(ctx context.Context) ([]store.BacklogEntry, error) {
	b, err := e.store.Backlog(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the backlog: %w", err)
	}
	return b, nil
}
