package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/runtime/dag"
)

// TriggerTx is Trigger in tx, a transaction the caller began on the
// store's database and commits or rolls back itself: the run, its tasks,
// its idempotency key, its admission by a concurrency cap and the
// notification of its ready steps exist if and only if tx commits. An
// order inserted and its workflow started in one transaction are both
// there, or neither, whatever crashes when.
//
// Nothing starts before tx commits: the run's first steps go through the
// ready queue (no worker of this engine starts them at once, as Trigger
// may), and the database tells the listening workers at commit. Until
// tx ends it holds the locks the trigger takes (see store.TxTriggers):
// the tenant's row of the fair queue, which every enqueue of the tenant's
// steps needs, completions of its runs included; a capped workflow's
// slot; the key. Keep tx short: write, trigger, commit.
//
// A key taken by a run another transaction is creating makes TriggerTx
// wait for that transaction: when it commits, TriggerTx returns its run
// (Duplicate); when it rolls back, TriggerTx starts the run. This is
// READ COMMITTED's behaviour, Postgres's default; in a REPEATABLE READ or
// SERIALIZABLE transaction such a race is a serialization failure, to
// retry as any.
//
// The run's creation time, and a deadline counted from it, are tx's start
// on the database's clock (Postgres's now()), unless the store has a clock
// of its own.
//
// An error leaves tx as it was before the call (the work runs under a
// savepoint): the caller may go on and commit without the run. The store
// must be one that joins a database transaction (pgstore): with memstore
// the error wraps store.ErrNoTx and nothing is written.
func (e *Engine) TriggerTx(ctx context.Context, tx pgx.Tx, workflow, tenant string, input any, opts ...TriggerOption) (dag.RunID, error) {
	t, err := e.TriggerRunTx(ctx, tx, workflow, tenant, input, opts...)
	return t.ID, err
}

// TriggerRunTx is TriggerTx, and tells whether the run was started by this
// call or found by its idempotency key. Generated code calls it from
// StartTx on the typed handle.
func (e *Engine) TriggerRunTx(ctx context.Context, tx pgx.Tx, workflow, tenant string, input any, opts ...TriggerOption) (Triggered, error) {
	req := TriggerRequest{Workflow: workflow, Tenant: tenant, Input: input}
	for _, o := range opts {
		o(&req)
	}
	ts, err := e.TriggerManyRunsTx(ctx, tx, []TriggerRequest{req})
	if err != nil {
		return Triggered{}, err
	}
	return ts[0], nil
}

// TriggerManyRunsTx is TriggerManyRuns in tx, as TriggerTx is Trigger.
func (e *Engine) TriggerManyRunsTx(ctx context.Context, tx pgx.Tx, reqs []TriggerRequest) ([]Triggered, error) {
	runs, err := e.newRuns(ctx, reqs)
	if err != nil {
		return nil, err
	}
	// No eager start and no wakeLoop: nothing is ready before tx commits,
	// and its commit notifies the listening workers, this one included.
	if err := e.store.CreateRunsTx(ctx, tx, runs); err != nil {
		return nil, fmt.Errorf("trigger in a transaction: %w", err)
	}
	return e.triggered(runs), nil
}

// SignalTx is Signal in tx, a transaction the caller began on the store's
// database: the signal is delivered (or held) if and only if tx commits.
// Until then tx holds the run's row lock, which every completion of the
// run's steps needs: keep it short. The run may be one triggered in tx.
// Generated code calls it from Send<Type>Tx on the typed handle. An error
// leaves tx as it was before the call; with memstore it wraps
// store.ErrNoTx.
func (e *Engine) SignalTx(ctx context.Context, tx pgx.Tx, workflow string, id dag.RunID, step string, payload any) error {
	b, err := encodeInput(payload)
	if err != nil {
		return fmt.Errorf("signal %s of run %s: %w", step, id, err)
	}
	return e.SignalRawTx(ctx, tx, workflow, id, step, b)
}

// SignalRawTx is SignalTx with the payload encoded already (as JSON).
func (e *Engine) SignalRawTx(ctx context.Context, tx pgx.Tx, workflow string, id dag.RunID, step string, payload []byte) error {
	if err := e.checkPayload("the signal's payload", payload); err != nil {
		return fmt.Errorf("signal %s of run %s: %w", step, id, err)
	}
	// The run's workflow is checked by the store, in tx: the run may be
	// one tx created, which no other transaction sees yet.
	if _, err := e.store.SendSignalTx(ctx, tx, workflow, id, step, payload); err != nil {
		return fmt.Errorf("signal %s of run %s: %w", step, id, err)
	}
	return nil
}
