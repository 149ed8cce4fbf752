package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// RecordSignatures implements store.Deploys with one statement; the
// descriptions go to dagen_signatures.
func (s *Store) RecordSignatures(ctx context.Context, infos []store.SignatureInfo) error {
	if len(infos) == 0 {
		return nil
	}
	p := dbsqlc.RecordSignaturesParams{Now: s.clock()}
	for _, si := range infos {
		parents := si.Parents
		if parents == nil {
			parents = []store.SignatureParent{}
		}
		js, err := json.Marshal(parents)
		if err != nil {
			return fmt.Errorf("record signature %s: %w", si.Signature, err)
		}
		p.Signatures = append(p.Signatures, si.Signature)
		p.Workflows = append(p.Workflows, si.Workflow)
		p.Steps = append(p.Steps, si.Step)
		p.Kinds = append(p.Kinds, string(si.Kind))
		p.InputTypes = append(p.InputTypes, si.Input)
		p.OutputTypes = append(p.OutputTypes, si.Output)
		p.Parents = append(p.Parents, string(js))
		p.Children = append(p.Children, si.Child)
	}
	if err := s.q.RecordSignatures(ctx, s.pool, p); err != nil {
		return fmt.Errorf("record %d signatures: %w", len(infos), err)
	}
	return nil
}

// Serve implements store.Deploys: the signatures and the concurrency go in
// the worker's row of dagen_workers, which its heartbeats keep alive.
func (s *Store) Serve(ctx context.Context, worker string, sv store.Serving) error {
	if err := s.q.Serve(ctx, s.pool, dbsqlc.ServeParams{Worker: worker, Signatures: nonNil(sv.Signatures), Concurrency: int32(sv.Concurrency), Now: s.clock()}); err != nil {
		return fmt.Errorf("publish the signatures worker %s serves: %w", worker, err)
	}
	return nil
}

// Unserved implements store.Deploys.
func (s *Store) Unserved(ctx context.Context, id dag.RunID) ([]store.UnservedTask, error) {
	rows, err := s.q.UnservedTasks(ctx, s.pool, uuidOf(id), s.clock())
	if err != nil {
		return nil, fmt.Errorf("unserved tasks of run %s: %w", id, err)
	}
	if len(rows) == 0 {
		ok, err := s.q.RunExists(ctx, s.pool, uuidOf(id))
		if err != nil {
			return nil, fmt.Errorf("unserved tasks of run %s: %w", id, err)
		}
		if !ok {
			return nil, fmt.Errorf("unserved tasks of run %s: %w", id, store.ErrRunNotFound)
		}
	}
	out := make([]store.UnservedTask, len(rows))
	for i, r := range rows {
		out[i] = store.UnservedTask{RunID: id, Workflow: r.Workflow, Step: r.Name, Signature: r.Signature, Since: timeOf(r.QueuedAt)}
	}
	return out, nil
}

// ReportUnserved implements store.Deploys: it marks the queue entries and
// logs their WAITING events in one transaction.
func (s *Store) ReportUnserved(ctx context.Context, grace time.Duration, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	n := 0
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		if err := s.q.NoJIT(ctx, tx.Queue()); err != nil {
			return fmt.Errorf("turn JIT compilation off: %w", err)
		}
		rows, err := s.q.ReportUnserved(ctx, tx.Queue(), dbsqlc.ReportUnservedParams{Now: s.clock(), GraceSeconds: grace.Seconds(), Max: int32(min(limit, 1<<30))})
		if err != nil {
			return fmt.Errorf("find unserved tasks: %w", err)
		}
		if len(rows) == 0 {
			return errNothingToDo
		}
		var ev events
		for _, r := range rows {
			ev.add(dag.RunID(r.RunID.Bytes), r.Task, store.EventWaiting, int(r.Attempt), store.WaitingDetail(r.Task, r.Signature))
		}
		n = len(rows)
		return ev.insert(ctx, s.q, tx.Queue(), s.clock())
	})
	if err == errNothingToDo {
		err = nil
	}
	if err != nil {
		return 0, fmt.Errorf("report unserved tasks: %w", err)
	}
	return n, nil
}

// InFlight implements store.Deploys with two aggregates over the RUNNING
// runs and their tasks, in one snapshot.
func (s *Store) InFlight(ctx context.Context, served []string, sample int) (store.InFlightReport, error) {
	var rep store.InFlightReport
	served = nonNil(served)
	err := s.inTx(ctx, func(tx *pipeline.Tx) error {
		tx.QueueSQL("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
		rows, err := s.q.InFlight(ctx, tx.Queue(), served, int32(max(sample, 0)))
		if err != nil {
			return fmt.Errorf("read in-flight signatures: %w", err)
		}
		for _, r := range rows {
			f := store.InFlight{Signature: r.Signature, Workflow: r.Workflow, Step: r.Step, Served: r.Served, Runs: int(r.Runs), Sample: runIDs(r.Sample)}
			if r.Known {
				si := store.SignatureInfo{
					Signature: r.Signature, Workflow: r.Workflow, Step: r.Step, Kind: store.TaskKind(r.InfoKind.String),
					Input: r.InputType.String, Output: r.OutputType.String, Child: r.Child,
				}
				if err := json.Unmarshal([]byte(r.Parents), &si.Parents); err != nil {
					return fmt.Errorf("read signature %s: parents: %w", r.Signature, err)
				}
				if len(si.Parents) == 0 {
					si.Parents = nil
				}
				f.Info = &si
			}
			rep.Signatures = append(rep.Signatures, f)
		}
		wrows, err := s.q.InFlightRuns(ctx, tx.Queue(), int32(max(sample, 0)), served)
		if err != nil {
			return fmt.Errorf("read in-flight runs: %w", err)
		}
		for _, r := range wrows {
			rep.Workflows = append(rep.Workflows, store.InFlightRuns{Workflow: r.Workflow, Runs: int(r.Runs), Stranded: int(r.Stranded), Sample: runIDs(r.Sample)})
		}
		return nil
	})
	if err != nil {
		return store.InFlightReport{}, err
	}
	return rep, nil
}

func runIDs(ids []pgtype.UUID) []dag.RunID {
	var out []dag.RunID
	for _, id := range ids {
		out = append(out, dag.RunID(id.Bytes))
	}
	return out
}

// SignatureInfos implements store.SignatureReader.
func (s *Store) SignatureInfos(ctx context.Context, signatures []string) ([]store.SignatureInfo, error) {
	rows, err := s.q.GetSignatures(ctx, s.pool, signatures)
	if err != nil {
		return nil, fmt.Errorf("read %d signatures: %w", len(signatures), err)
	}
	out := make([]store.SignatureInfo, 0, len(rows))
	for _, r := range rows {
		si := store.SignatureInfo{Signature: r.Signature, Workflow: r.Workflow, Step: r.Step, Kind: store.TaskKind(r.Kind), Input: r.InputType, Output: r.OutputType, Child: r.Child}
		if err := json.Unmarshal([]byte(r.Parents), &si.Parents); err != nil {
			return nil, fmt.Errorf("read signature %s: its parents: %w", r.Signature, err)
		}
		out = append(out, si)
	}
	return out, nil
}
