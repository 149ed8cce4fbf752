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
	Output    string // the step's output type
	Parents   []SignatureParent
}

// SignatureParent is a parent in a SignatureInfo: its stored name and the
// type of its output.
type SignatureParent struct {
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
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
// BACKOFF) of RUNNING runs that have one signature.
type InFlight struct {
	Signature string
	Workflow  string
	Step      string
	Runs      int         // how many runs have such a task (one each)
	Sample    []dag.RunID // a few of those runs, in id order
	// Info describes the signature, when a worker recorded it
	// ([Deploys.RecordSignatures]); nil otherwise.
	Info *SignatureInfo
}

// Deploys is implemented by stores that know what code can run the tasks
// they hold, so a deploy never strands or corrupts a run: workers record
// the signatures they serve, and operators see which tasks wait for a
// worker and which runs the next build could not finish.
type Deploys interface {
	// RecordSignatures keeps the descriptions of signatures, by signature:
	// recording one again changes nothing.
	RecordSignatures(ctx context.Context, infos []SignatureInfo) error

	// Serve records the signatures worker serves, in its worker record; a
	// heartbeat keeps that record alive ([Workers]).
	Serve(ctx context.Context, worker string, signatures []string) error

	// Unserved returns the QUEUED tasks of run id whose signature no live
	// worker serves, in task order.
	Unserved(ctx context.Context, id dag.RunID) ([]UnservedTask, error)

	// ReportUnserved logs an [EventWaiting] for up to limit QUEUED tasks
	// that were queued before queuedBefore, whose signature no live worker
	// serves, and that have no such event for their current round yet. It
	// returns how many it logged. The leader calls it.
	ReportUnserved(ctx context.Context, queuedBefore time.Time, limit int) (int, error)

	// InFlight returns, for each signature of an unfinished task of a
	// RUNNING run, how many runs wait on it, with up to sample run ids;
	// sorted by workflow, step, signature.
	InFlight(ctx context.Context, sample int) ([]InFlight, error)
}

// WaitingDetail is the detail of an [EventWaiting].
func WaitingDetail(step, signature string) string {
	return "no live worker serves " + step + " (signature " + signature + ")"
}
