package pgstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

var (
	_ store.Fleet       = (*Store)(nil)
	_ store.LeaderNamer = (*Store)(nil)
)

// NameLeader implements store.LeaderNamer: one upsert of dagen_leader.
func (s *Store) NameLeader(ctx context.Context, worker string) error {
	if err := s.q.NameLeader(ctx, s.pool, worker, s.clock()); err != nil {
		return fmt.Errorf("name the leader %s: %w", worker, err)
	}
	return nil
}

// Workers implements store.Fleet.
func (s *Store) Workers(ctx context.Context) ([]store.WorkerInfo, error) {
	rows, err := s.q.ListWorkers(ctx, s.pool, s.clock())
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	out := make([]store.WorkerInfo, len(rows))
	for i, r := range rows {
		out[i] = store.WorkerInfo{
			ID: r.ID, HeartbeatAt: timeOf(r.HeartbeatAt), AliveUntil: timeOf(r.AliveUntil),
			Alive: r.Alive, Leader: r.Alive && r.NamedLeader, Signatures: r.Signatures, Concurrency: int(r.Concurrency),
		}
	}
	return out, nil
}

// Backlog implements store.Fleet with one aggregate over the tables that
// hold unfinished work only: the ready queue, the leases and the timers.
func (s *Store) Backlog(ctx context.Context) ([]store.BacklogEntry, error) {
	rows, err := s.q.Backlog(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("read the backlog: %w", err)
	}
	var out []store.BacklogEntry
	for _, r := range rows {
		if n := len(out); n == 0 || out[n-1].Tenant != r.Tenant || out[n-1].Workflow != r.Workflow {
			out = append(out, store.BacklogEntry{Tenant: r.Tenant, Workflow: r.Workflow})
		}
		e := &out[len(out)-1]
		switch store.TaskStatus(r.State) {
		case store.TaskQueued:
			e.Queued = int(r.N)
			e.OldestQueued = time.Duration(r.OldestSeconds * float64(time.Second))
		case store.TaskRunning:
			e.Running = int(r.N)
		case store.TaskSleeping:
			e.Sleeping = int(r.N)
		case store.TaskBackoff:
			e.Backoff = int(r.N)
		}
	}
	return out, nil
}

// QueuePlaces implements store.Fleet with one query: a bounded scan of the
// ready queue's primary key below each task, and for its tenant, probes of
// the blocks before its own.
func (s *Store) QueuePlaces(ctx context.Context, run dag.RunID, steps []string) (map[string]store.QueuePlace, error) {
	rows, err := s.q.QueuePlaces(ctx, s.pool, dbsqlc.QueuePlacesParams{Most: store.MaxQueueAhead, RunID: uuidOf(run), Tasks: steps})
	if err != nil {
		return nil, fmt.Errorf("read the queue places of run %s: %w", run, err)
	}
	out := make(map[string]store.QueuePlace, len(rows))
	for _, r := range rows {
		out[r.Task] = store.QueuePlace{Ahead: int(r.Ahead), TenantAhead: int(r.TenantAhead)}
	}
	waits, err := s.rateWaits(ctx, s.pool, run)
	if err != nil {
		return nil, err
	}
	for task, why := range waits {
		if slices.Contains(steps, task) {
			out[task] = store.QueuePlace{RateLimited: why}
		}
	}
	return out, nil
}
