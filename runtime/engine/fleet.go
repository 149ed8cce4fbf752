package engine

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"

	"github.com/dagenhq/dagen/runtime/engine/internal/meters"
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

// ObserveBacklog registers on mp the backlog gauge that a leading engine
// reports (dagen.backlog.tasks by tenant, workflow and state), read from
// st once per collection at most: for a process that reads the store but
// runs no worker, such as dagen ui. topTenants is how many tenants, the
// busiest, keep their names (0: 10); the rest are summed as "other". The
// returned func unregisters the gauge.
//
// A fleet whose leader reports the backlog too exports it twice, under
// two Prometheus jobs or instances: query one of them.
func ObserveBacklog(mp metric.MeterProvider, st store.Fleet, topTenants int) (unregister func() error, err error) {
	return meters.ObserveBacklog(mp, meters.BacklogConfig{Read: st.Backlog, TopTenants: topTenants})
}
