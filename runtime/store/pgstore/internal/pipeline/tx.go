package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A Tx is a transaction whose statements are pipelined: BEGIN goes with
// its first query, statements without results wait for the next query,
// and COMMIT goes with whatever is left. A transaction that reads once and
// then writes takes two round trips, not four.
type Tx struct {
	Pipeline
}

// InTx runs fn in a transaction on a connection of pool, and commits it if
// fn returns nil. Then, when it is not nil, runs after COMMIT is queued:
// its first query goes with the COMMIT, in the same round trip, and reads
// what the transaction committed. An error of then is the call's, as one
// of the COMMIT would be: the transaction may have committed all the same.
//
// A transaction that fails is rolled back, within ctx or, once ctx has
// ended, within a second of its own (see rollbackContext).
func InTx(ctx context.Context, pool *pgxpool.Pool, fn, then func(tx *Tx) error) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer conn.Release()
	tx := &Tx{Pipeline: Pipeline{db: conn}}
	tx.QueueSQL("begin") // it goes with the first query
	defer func() {
		// Nothing to undo when BEGIN was never sent, or when COMMIT failed
		// (it ended the transaction). A broken connection is not reused.
		if err != nil {
			_ = tx.DiscardAhead() // results of queries sent ahead and never read
		}
		if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := rollbackContext(ctx)
			defer cancel()
			_, _ = conn.Exec(rctx, "rollback") // the error that made us roll back matters more
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	tx.QueueSQL("commit")
	if then != nil {
		if err := then(tx); err != nil {
			return err
		}
	}
	return tx.Send(ctx)
}

// Join returns a pipelined Tx over tx, a transaction its caller began and
// ends: statements queued on it run in tx, and nothing commits or rolls
// it back but the caller.
func Join(tx pgx.Tx) *Tx { return &Tx{Pipeline: Pipeline{db: tx}} }

// RollbackContext is rollbackContext, for a rollback to a savepoint of a
// transaction that Join joined.
func RollbackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return rollbackContext(ctx)
}

// rollbackContext returns the context a failed transaction is rolled back
// under: ctx while it lasts, or, once it has ended, a context of its own,
// for rollbackTimeout at most. A rollback that does not answer in time
// (a database that froze) gives its connection up, which rolls the
// transaction back too: it never holds its caller, which may be Stop
// waiting for the keeper, past ctx.
func rollbackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	return context.WithTimeout(ctx, rollbackTimeout)
}

// rollbackTimeout bounds a rollback (see rollbackContext).
const rollbackTimeout = time.Second
