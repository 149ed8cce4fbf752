package engine

import (
	"context"
	"fmt"

	"github.com/dagenhq/dagen/runtime/store"
)

// Workers returns the workers sharing the engine's store: alive or not,
// their last heartbeat and the task signatures they serve. It fails with
// ErrNotSupported when the store does not implement store.Fleet.
func (e *Engine) Workers(ctx context.Context) ([]store.WorkerInfo, error) {
	fl, ok := e.store.(store.Fleet)
	if !ok {
		return nil, fmt.Errorf("list workers: store %T does not implement store.Fleet: %w", e.store, ErrNotSupported)
	}
	ws, err := fl.Workers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return ws, nil
}

// Backlog counts the unfinished tasks of running runs per tenant and
// workflow: queued, running, sleeping and waiting out a retry delay. It
// fails with ErrNotSupported when the store does not implement store.Fleet.
func (e *Engine) Backlog(ctx context.Context) ([]store.BacklogEntry, error) {
	fl, ok := e.store.(store.Fleet)
	if !ok {
		return nil, fmt.Errorf("read the backlog: store %T does not implement store.Fleet: %w", e.store, ErrNotSupported)
	}
	b, err := fl.Backlog(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the backlog: %w", err)
	}
	return b, nil
}
