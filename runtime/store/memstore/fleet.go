package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/dagenhq/dagen/runtime/store"
)

var _ store.Fleet = (*Store)(nil)

// Workers implements store.Fleet.
func (s *Store) Workers(ctx context.Context) ([]store.WorkerInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	now := s.now()
	ids := map[string]bool{}
	for id := range s.workers {
		ids[id] = true
	}
	for id := range s.serves { // published, not heartbeating yet
		ids[id] = true
	}
	out := make([]store.WorkerInfo, 0, len(ids))
	for id := range ids {
		until := s.workers[id]
		out = append(out, store.WorkerInfo{
			// memstore elects no leader: every alive worker leads.
			ID: id, HeartbeatAt: s.beats[id], AliveUntil: until, Alive: until.After(now), Leader: until.After(now),
			Signatures: slices.Clone(s.serves[id]),
		})
	}
	slices.SortFunc(out, func(a, b store.WorkerInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// Backlog implements store.Fleet.
func (s *Store) Backlog(ctx context.Context) ([]store.BacklogEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	type key struct{ tenant, workflow string }
	counts := map[key]*store.BacklogEntry{}
	for _, r := range s.runs {
		if r.rec.Status.Terminal() {
			continue
		}
		for ti := range r.tasks {
			var field *int
			k := key{r.rec.Tenant, r.rec.Workflow}
			e := counts[k]
			if e == nil {
				e = &store.BacklogEntry{Tenant: k.tenant, Workflow: k.workflow}
			}
			switch r.tasks[ti].status {
			case store.TaskQueued:
				field = &e.Queued
			case store.TaskRunning:
				field = &e.Running
			case store.TaskSleeping:
				field = &e.Sleeping
			case store.TaskBackoff:
				field = &e.Backoff
			default:
				continue
			}
			*field++
			counts[k] = e
		}
	}
	out := make([]store.BacklogEntry, 0, len(counts))
	for _, e := range counts {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b store.BacklogEntry) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Workflow, b.Workflow))
	})
	return out, nil
}
