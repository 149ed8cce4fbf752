package store

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

// SignatureInfo describes a task signature: what a task with it reads and
// writes. Types are Go types as package path and name
// ("example.com/shop.Receipt"); empty for no value.
type SignatureInfo struct {
	Signature string
	Workflow  string
	Step      string
	Kind      TaskKind
	Input     string // the workflow input type
	Output    string // the step's output type (one element's, for a mapped step)
	Parents   []SignatureParent
	// Each is the parent a mapped step (KindMap) maps; it is part of the
	// signature but not recorded by Deploys.RecordSignatures.
	Each string
	// Child describes the run a child step (KindChild, or a mapped one)
	// starts: the child workflow's stored name, its input type and its
	// result step, space-separated. It is part of the signature, so a
	// deploy that changes what the child takes or gives is a new one.
	Child string
}

// SignatureParent is a parent in a SignatureInfo: its stored name and the
// type of its output. Optional (the child takes it as a dag.Maybe) is
// recorded for the console to draw, but is policy, not part of the
// signature.
type SignatureParent struct {
	Name     string `json:"name"`
	Type     string `json:"type,omitempty"`
	Optional bool   `json:"optional,omitempty"`
}

// SignatureReader, part of [Admin], reads back the signature descriptions
// Deploys.RecordSignatures recorded.
type SignatureReader interface {
	// SignatureInfos returns the recorded descriptions of these
	// signatures; unknown ones are left out.
	SignatureInfos(ctx context.Context, signatures []string) ([]SignatureInfo, error)
}

// UnservedTask is a QUEUED task that no live worker serves: it waits for a
// worker whose code has its signature.
type UnservedTask struct {
	RunID     dag.RunID
	Workflow  string
	Step      string
	Signature string
	Since     time.Time // when it was queued
}

// InFlight counts the unfinished tasks (PENDING, QUEUED, RUNNING, SLEEPING or
// BACKOFF; not a PENDING onfailure task) of RUNNING runs that have one
// signature.
type InFlight struct {
	Signature string
	Workflow  string
	Step      string
	Served    bool        // one of the signatures asked about
	Runs      int         // how many runs have such a task (one each)
	Sample    []dag.RunID // a few of those runs, in id order
	// Info describes the signature, when a worker recorded it
	// ([Deploys.RecordSignatures]); nil otherwise.
	Info *SignatureInfo
}

// InFlightRuns counts the RUNNING runs of a workflow, and those of them
// that code serving the signatures asked about could not finish: they have
// an unfinished task of another signature.
type InFlightRuns struct {
	Workflow string
	Runs     int
	Stranded int
	Sample   []dag.RunID // a few stranded runs, in id order
}

// InFlightReport is what [Deploys.InFlight] returns, sorted: signatures by
// workflow, step and signature; workflows by name.
type InFlightReport struct {
	Signatures []InFlight
	Workflows  []InFlightRuns
}

// Deploys, part of [Admin], knows what code can run the tasks a store
// holds, so a deploy never strands or corrupts a run: workers record the
// signatures they serve, and operators see which tasks wait for a worker
// and which runs the next build could not finish.
type Deploys interface {
	// RecordSignatures keeps the descriptions of signatures, by signature:
	// recording one again changes nothing.
	RecordSignatures(ctx context.Context, infos []SignatureInfo) error

	// Serve records what worker serves, in its worker record; a heartbeat
	// keeps that record alive ([Workers]).
	Serve(ctx context.Context, worker string, s Serving) error

	// Unserved returns the QUEUED tasks of run id whose signature no live
	// worker serves, in task order.
	Unserved(ctx context.Context, id dag.RunID) ([]UnservedTask, error)

	// ReportUnserved logs an [EventWaiting] for up to limit QUEUED tasks
	// that have been queued for longer than grace (on the store's clock),
	// whose signature no live worker serves, and that have no such event
	// for their current round yet. It returns how many it logged. The
	// leader calls it.
	ReportUnserved(ctx context.Context, grace time.Duration, limit int) (int, error)

	// InFlight describes the RUNNING runs as code that serves the
	// signatures served would see them: for each signature of their
	// unfinished tasks, how many runs wait on it and whether it is served;
	// for each workflow, how many runs that code could not finish. Samples
	// hold up to sample run ids. It reads every RUNNING run: it is for
	// operators before a deploy, not for workers.
	InFlight(ctx context.Context, served []string, sample int) (InFlightReport, error)
}

// WaitingDetail is the detail of an [EventWaiting].
func WaitingDetail(step, signature string) string {
	return "no live worker serves " + step + " (signature " + signature + ")"
}

// Serving is what a worker publishes of itself with [Deploys.Serve].
type Serving struct {
	// Signatures are the task signatures it serves.
	Signatures []string
	// Concurrency is how many steps it runs at once, for operators.
	Concurrency int
}
