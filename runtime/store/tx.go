package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/runtime/dag"
)

// TxTriggers, part of [Triggers], creates runs and sends signals in a
// transaction the caller opened on the store's database, so that they
// exist if and only if that transaction commits: an order inserted and
// its workflow started together, or neither. Nothing is written in a
// transaction of the store's own, nothing is started on a worker before
// the caller commits (the roots go through the ready queue), and the
// notification of ready work is sent by the database at commit.
//
// The caller's transaction holds, from the call to its end, the row locks
// the trigger takes: the tenant's row of the fair queue (every enqueue of
// the tenant's tasks waits for it, completions of its runs on workers
// included), a capped workflow's slot row (every trigger and every end of
// a run of that slot waits for it), a key's row (a trigger with the same
// key waits for it, then finds the run) and, for a signal, the run's row.
// Callers keep such transactions short.
//
// A store that cannot join a database transaction (memstore) returns an
// error wrapping [ErrNoTx], and writes nothing.
type TxTriggers interface {
	// CreateRunsTx is [Execution.CreateRuns] in tx: the runs, their tasks,
	// their keys (NewRun.Existing is set as CreateRuns sets it), their
	// admission by their caps and their queue entries are written in tx
	// and are seen by others once it commits. An error leaves tx as it
	// was before the call, usable.
	CreateRunsTx(ctx context.Context, tx pgx.Tx, runs []NewRun) error

	// SendSignalTx is [Signaler.SendSignal] in tx, with its errors; the
	// run may be one created in tx. A workflow that is not empty must be
	// the run's, else the error wraps [ErrNotSignal]. An error leaves tx as
	// it was before the call, usable.
	SendSignalTx(ctx context.Context, tx pgx.Tx, workflow string, id dag.RunID, step string, payload []byte) (delivered bool, err error)
}

// ErrNoTx is wrapped by the error of a [TxTriggers] method of a store that
// keeps its data outside any database the caller's transaction could span
// (memstore).
var ErrNoTx = errors.New("the store cannot write in the caller's database transaction")
