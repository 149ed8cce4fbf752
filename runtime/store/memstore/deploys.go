package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// RecordSignatures implements store.Deploys.
func (s *Store) RecordSignatures(ctx context.Context, infos []store.SignatureInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.lock()
	defer s.unlock()
	for _, si := range infos {
		if _, ok := s.sigInfos[si.Signature]; !ok {
			si.Parents = slices.Clone(si.Parents)
			s.sigInfos[si.Signature] = si
		}
	}
	return nil
}

// Serve implements store.Deploys.
func (s *Store) Serve(ctx context.Context, worker string, sv store.Serving) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.lock()
	defer s.unlock()
	sv.Signatures = slices.Clone(sv.Signatures)
	s.serves[worker] = sv
	return nil
}

// served returns the signatures live workers serve. The caller holds the
// lock.
func (s *Store) served(now time.Time) map[string]bool {
	out := make(map[string]bool)
	for w, sv := range s.serves {
		if s.workers[w].After(now) {
			for _, sig := range sv.Signatures {
				out[sig] = true
			}
		}
	}
	return out
}

// Unserved implements store.Deploys.
func (s *Store) Unserved(ctx context.Context, id dag.RunID) ([]store.UnservedTask, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	r := s.runs[id]
	if r == nil {
		return nil, fmt.Errorf("unserved tasks of run %s: %w", id, store.ErrRunNotFound)
	}
	served := s.served(s.now())
	var out []store.UnservedTask
	for ti := range r.tasks {
		t, nt := r.tasks[ti], r.spec(ti)
		if t.Status == store.TaskQueued && !served[nt.Signature] {
			out = append(out, store.UnservedTask{RunID: id, Workflow: r.rec.Workflow, Step: nt.Name, Signature: nt.Signature, Since: t.queuedAt})
		}
	}
	return out, nil
}

// ReportUnserved implements store.Deploys.
func (s *Store) ReportUnserved(ctx context.Context, grace time.Duration, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.lock()
	defer s.unlock()
	now := s.now()
	queuedBefore := now.Add(-grace)
	served := s.served(now)
	n := 0
	for sig, q := range s.queues {
		if served[sig] {
			continue
		}
		for _, e := range *q {
			if n >= limit {
				return n, nil
			}
			t := e.run.tasks[e.task]
			if !e.live() || t.waitingLogged || !t.queuedAt.Before(queuedBefore) {
				continue
			}
			t.waitingLogged = true
			e.run.event(now, e.task, store.EventWaiting, t.Attempt, store.WaitingDetail(e.run.spec(e.task).Name, sig))
			n++
		}
	}
	return n, nil
}

// InFlight implements store.Deploys.
func (s *Store) InFlight(ctx context.Context, served []string, sample int) (store.InFlightReport, error) {
	if err := ctx.Err(); err != nil {
		return store.InFlightReport{}, err
	}
	s.lock()
	defer s.unlock()
	bySig := make(map[string]*store.InFlight)
	byWorkflow := make(map[string]*store.InFlightRuns)
	for _, r := range s.runs {
		if r.Status.Terminal() {
			continue
		}
		wf := byWorkflow[r.rec.Workflow]
		if wf == nil {
			wf = &store.InFlightRuns{Workflow: r.rec.Workflow}
			byWorkflow[r.rec.Workflow] = wf
		}
		wf.Runs++
		stranded := false
		counted := make(map[string]bool) // signatures counted for this run: elements share their step's
		for ti := range r.tasks {
			t, nt := r.tasks[ti], r.spec(ti)
			if t.Status.Terminal() || nt.Kind == store.KindOnFailure && t.Status == store.TaskPending || counted[nt.Signature] {
				continue
			}
			counted[nt.Signature] = true
			f := bySig[nt.Signature]
			if f == nil {
				step := nt.Name
				if el := r.element(ti); el != nil {
					step = r.spec(el.mapTi).Name
				}
				f = &store.InFlight{Signature: nt.Signature, Workflow: r.rec.Workflow, Step: step, Served: slices.Contains(served, nt.Signature)}
				if si, ok := s.sigInfos[nt.Signature]; ok {
					si.Parents = slices.Clone(si.Parents)
					f.Info = &si
				}
				bySig[nt.Signature] = f
			}
			f.Runs++
			f.Sample = append(f.Sample, r.rec.ID)
			stranded = stranded || !f.Served
		}
		if stranded {
			wf.Stranded++
			wf.Sample = append(wf.Sample, r.rec.ID)
		}
	}
	var rep store.InFlightReport
	for _, f := range bySig {
		f.Sample = firstIDs(f.Sample, sample)
		rep.Signatures = append(rep.Signatures, *f)
	}
	slices.SortFunc(rep.Signatures, compareInFlight)
	for _, wf := range byWorkflow {
		wf.Sample = firstIDs(wf.Sample, sample)
		rep.Workflows = append(rep.Workflows, *wf)
	}
	slices.SortFunc(rep.Workflows, func(a, b store.InFlightRuns) int { return cmp.Compare(a.Workflow, b.Workflow) })
	return rep, nil
}

// firstIDs returns the first n of ids in id order.
func firstIDs(ids []dag.RunID, n int) []dag.RunID {
	slices.SortFunc(ids, compareIDs)
	return ids[:min(len(ids), max(n, 0))]
}

func compareInFlight(a, b store.InFlight) int {
	return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Step, b.Step), cmp.Compare(a.Signature, b.Signature))
}

// SignatureInfos implements store.SignatureReader.
func (s *Store) SignatureInfos(ctx context.Context, signatures []string) ([]store.SignatureInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	var out []store.SignatureInfo
	for _, sig := range slices.Compact(slices.Sorted(slices.Values(signatures))) {
		if si, ok := s.sigInfos[sig]; ok {
			si.Parents = slices.Clone(si.Parents)
			out = append(out, si)
		}
	}
	return out, nil
}
