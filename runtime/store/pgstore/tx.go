package pgstore

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

var _ store.TxTriggers = (*Store)(nil)

// CreateRunsTx implements store.TxTriggers. It does what CreateRuns does
// for runs with keys or caps (createWithin), in tx instead of a
// transaction of the store's own, and starts no root on a worker: the
// roots are queued, and Enqueue's notification is sent by Postgres when
// tx commits. It shares no transaction with other calls (groupcommit),
// and costs the round trips of createWithin (one for runs without keys
// or caps), with no BEGIN or COMMIT of its own.
//
// The work runs under a savepoint, so that an error leaves tx usable
// (a creation refused for want of a range of the history tables is made
// again, once the range is made, as CreateRuns does), and with the
// store's search_path, which it sets for the call's statements and gives
// back (see inCallerTx). The locks it takes are store.TxTriggers's: the
// tenant's row of the fair queue is taken by the last statement.
func (s *Store) CreateRunsTx(ctx context.Context, tx pgx.Tx, runs []store.NewRun) error {
	if len(runs) == 0 {
		return nil
	}
	if err := s.ensureBuckets(ctx, runs); err != nil { // apart from tx: see ensureBuckets
		return createError(len(runs), err)
	}
	queued := 0
	var invalid error // the runs' own fault: no statement was sent
	err := s.parts.WithRanges(ctx, runs, func() error {
		for i := range runs {
			runs[i].Existing = dag.RunID{} // set again by an attempt that finds the key taken
		}
		graphs, rp, err := s.prepare(runs)
		if err != nil {
			invalid = err
			return err
		}
		return s.inCallerTx(ctx, tx, func(ptx *pipeline.Tx) error {
			var err error
			_, queued, _, err = s.createWithin(ctx, ptx, runs, graphs, rp, store.ClaimParams{}, true)
			return err
		})
	})
	if invalid != nil {
		return invalid
	}
	if err != nil {
		return createError(len(runs), err)
	}
	s.noteQueued(ctx, queued)
	return nil
}

// SendSignalTx implements store.TxTriggers: SendSignal's work, in tx under
// a savepoint, as CreateRunsTx does it. The run's row stays locked until
// tx ends.
func (s *Store) SendSignalTx(ctx context.Context, tx pgx.Tx, workflow string, id dag.RunID, step string, payload []byte) (bool, error) {
	var delivered bool
	var queued int
	var refused error
	err := s.inCallerTx(ctx, tx, func(ptx *pipeline.Tx) error {
		b := s.newBatch(ptx, 1)
		b.callers = true
		var err error
		delivered, queued, refused, err = s.sendSignal(ctx, b, workflow, id, step, payload)
		if err == nil && refused != nil {
			return errNothingToDo // back to the savepoint: the run's lock goes
		}
		return err
	})
	if refused != nil {
		return false, refused
	}
	if err != nil {
		return false, fmt.Errorf("send signal: %w", err)
	}
	s.noteQueued(ctx, queued)
	return delivered, nil
}

// The statements that run a call's work in the caller's transaction: under
// a savepoint, with the store's search_path (the schema of its pool),
// which may not be the one of the caller's connection. The caller's is
// kept in a setting of the transaction and given back, before the
// savepoint is released; a rollback to the savepoint gives it back too.
const (
	callerSavepoint   = "savepoint dagen_trigger"
	callerRelease     = "release savepoint dagen_trigger"
	callerRollback    = "rollback to savepoint dagen_trigger"
	keepCallerPath    = "select set_config('dagen.caller_search_path', current_setting('search_path'), true)"
	setStorePath      = "select set_config('search_path', $1::text, true)"
	restoreCallerPath = "select set_config('search_path', current_setting('dagen.caller_search_path'), true)"
)

// inCallerTx runs fn, a store's work, in tx, the caller's transaction,
// which it neither commits nor rolls back: the work is sent with its
// savepoint and the store's search_path ahead of it, in fn's first round
// trip, and the rest, with the release, in one more at most. When fn or a
// round trip fails, tx is rolled back to the savepoint (if anything was
// sent), which undoes the work and frees the locks it took: tx is as it
// was before the call.
//
// A connection that may not have the store's search_path gets it in a
// round trip of its own, first: pgx describes a batch's statements before
// it runs the first, and a statement described without the store's
// tables in its path fails (see samePath).
func (s *Store) inCallerTx(ctx context.Context, tx pgx.Tx, fn func(ptx *pipeline.Tx) error) (err error) {
	if tx == nil {
		return errors.New("no transaction (nil pgx.Tx)")
	}
	ptx := pipeline.Join(tx)
	ptx.QueueSQL(callerSavepoint)
	ptx.QueueSQL(keepCallerPath)
	ptx.QueueSQL(setStorePath, s.searchPath)
	defer func() {
		if err == nil {
			return
		}
		_ = ptx.DiscardAhead()
		if !ptx.Sent() {
			return
		}
		rctx, cancel := pipeline.RollbackContext(ctx)
		defer cancel()
		for _, sql := range []string{callerRollback, callerRelease} {
			if _, rerr := tx.Exec(rctx, sql); rerr != nil {
				err = fmt.Errorf("%w (and %s failed: %w)", err, sql, rerr)
				return
			}
		}
	}()
	if !s.samePath(tx) {
		if err := ptx.Send(ctx); err != nil {
			return err
		}
	}
	if err := fn(ptx); err != nil {
		return err
	}
	ptx.QueueSQL(restoreCallerPath)
	ptx.QueueSQL(callerRelease)
	return ptx.Send(ctx)
}

// samePath reports whether tx's connection surely has the store's
// search_path: it was opened as the store's pool opens its own (the same
// server, database, user and run-time parameters, search_path among
// them), and the pool sets nothing after connecting. A transaction of the
// store's pool, or of a pool with the same URL, is. Otherwise the
// search_path may differ (set by the URL, by an AfterConnect, by the
// role), and inCallerTx sets the store's in a round trip of its own.
func (s *Store) samePath(tx pgx.Tx) bool {
	conn := tx.Conn()
	if conn == nil {
		return false
	}
	pc := s.pool.Config()
	want, got := pc.ConnConfig, conn.Config()
	return pc.AfterConnect == nil && got.Host == want.Host && got.Port == want.Port &&
		got.Database == want.Database && got.User == want.User && maps.Equal(got.RuntimeParams, want.RuntimeParams)
}

// searchPathQuery reads the search_path of a store's connections as one
// that names its schemas, resolved ("$user" and schemas that do not exist
// left out), for a caller's transaction to use (inCallerTx).
const searchPathQuery = "select array_to_string(array(select quote_ident(x) from unnest(current_schemas(false)) as x), ',')"
