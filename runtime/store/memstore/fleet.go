package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

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
			Signatures: slices.Clone(s.serves[id].Signatures), Concurrency: s.serves[id].Concurrency,
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
	now := s.now()
	for _, r := range s.runs {
		if r.Status.Terminal() {
			continue
		}
		for ti := range r.tasks {
			var field *int
			k := key{r.rec.Tenant, r.rec.Workflow}
			e := counts[k]
			if e == nil {
				e = &store.BacklogEntry{Tenant: k.tenant, Workflow: k.workflow}
			}
			switch r.tasks[ti].Status {
			case store.TaskQueued:
				field = &e.Queued
				e.OldestQueued = max(e.OldestQueued, now.Sub(r.tasks[ti].queuedAt))
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

// QueuePlaces implements store.Fleet.
func (s *Store) QueuePlaces(ctx context.Context, id dag.RunID, steps []string) (map[string]store.QueuePlace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	out := map[string]store.QueuePlace{}
	r := s.runs[id]
	if r == nil {
		return out, nil
	}
	for _, name := range steps {
		ti, ok := r.indexOf(name)
		if !ok || r.tasks[ti].Status != store.TaskQueued {
			continue
		}
		if why := s.rateWait(r, ti, s.now()); why != "" {
			out[name] = store.QueuePlace{RateLimited: why}
			continue
		}
		mine := r.tasks[ti].queueID
		var p store.QueuePlace
		for _, q := range s.queues {
			for _, e := range *q {
				if e.id >= mine || !e.live() {
					continue
				}
				p.Ahead = min(p.Ahead+1, store.MaxQueueAhead)
				if e.run.rec.Tenant == r.rec.Tenant {
					p.TenantAhead = min(p.TenantAhead+1, store.MaxQueueAhead)
				}
			}
		}
		out[name] = p
	}
	return out, nil
}
