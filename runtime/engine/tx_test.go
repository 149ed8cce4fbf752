package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// Triggers in the caller's transaction (TriggerTx, SignalTx): the run, or
// the signal, exists if and only if the caller's transaction commits.

// txStore returns a Postgres store in a schema of its own, with a table
// of the caller's, orders, beside dagen's.
func txStore(t *testing.T) *pgstore.Store {
	t.Helper()
	pool := pgtest.NewPool(t, 8)
	require.NoError(t, pgstore.Migrate(context.Background(), pool))
	_, err := pool.Exec(context.Background(), "create table orders (id text primary key)")
	require.NoError(t, err)
	st, err := pgstore.New(context.Background(), pool, nil)
	require.NoError(t, err)
	return st
}

// txDef is a workflow with every part a trigger writes: a key (the
// input's id), a cap (of cap runs), a deadline; its one step waits for
// release, when it is not nil, and counts its runs.
func txDef(cap int, release <-chan struct{}, ran *atomic.Int64) *engine.Definition {
	return &engine.Definition{
		Name:        "order",
		Concurrency: cap,
		Timeout:     time.Hour,
		Key: func(in []byte) (string, error) {
			o, err := engine.Input[keyedOrder](engine.StepInput{Input: in})
			return o.ID, err
		},
		Steps: []engine.Step{{Name: "Charge", OutputType: "int", Run: func(ctx context.Context, in engine.StepInput) ([]byte, error) {
			ran.Add(1)
			if release != nil {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			o, err := engine.Input[keyedOrder](in)
			if err != nil {
				return nil, err
			}
			return engine.Encode(o.Amount)
		}}},
	}
}

// rowCounts counts the rows of every table of the schema (dagen's and
// the caller's orders) as q sees them.
func rowCounts(t *testing.T, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}) map[string]int {
	t.Helper()
	ctx := context.Background()
	rows, err := q.Query(ctx, `select c.relname::text from pg_class c
		where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') order by 1`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, tables, "dagen_runs")
	counts := make(map[string]int, len(tables))
	for _, name := range tables {
		var n int
		require.NoError(t, q.QueryRow(ctx, "select count(*) from "+pgx.Identifier{name}.Sanitize()).Scan(&n))
		counts[name] = n
	}
	return counts
}

// changed returns the tables whose counts differ, with both counts.
func changed(before, after map[string]int) map[string]string {
	out := map[string]string{}
	for name, n := range after {
		if before[name] != n {
			out[name] = fmt.Sprintf("%d → %d", before[name], n)
		}
	}
	return out
}

// TestTriggerTxRollback: a run triggered in a transaction that rolls back
// leaves nothing, in any table (runs, tasks, queue, events, timers, slots,
// keys, tenants); inside the transaction it is there, and the transaction
// goes on with its own writes.
func TestTriggerTxRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := txStore(t)
	var ran atomic.Int64
	e, err := engine.New(st, nil) // not started: nothing runs or beats in the background
	require.NoError(t, err)
	require.NoError(t, e.Register(txDef(1, nil, &ran)))
	before := rowCounts(t, st.Pool())

	tx, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "insert into orders (id) values ('o-1')")
	require.NoError(t, err)
	tr, err := e.TriggerRunTx(ctx, tx, "order", "acme", keyedOrder{ID: "o-1", Amount: 5})
	require.NoError(t, err)
	require.False(t, tr.Duplicate)
	_, err = tx.Exec(ctx, "insert into orders (id) values ('o-1b')") // the caller's search_path is its own again
	require.NoError(t, err)

	inside := changed(before, rowCounts(t, tx))
	for _, table := range []string{"orders", "dagen_runs", "dagen_tasks", "dagen_ready", "dagen_run_keys", "dagen_slots", "dagen_timers", "dagen_tenant_groups"} {
		require.Contains(t, inside, table, "the trigger writes %s in the caller's transaction", table)
	}
	_, err = st.GetRun(ctx, tr.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "no other transaction sees the run before the commit")

	require.NoError(t, tx.Rollback(ctx))
	after := changed(before, rowCounts(t, st.Pool()))
	// Not the run's: the range of the history tables its id needed (made
	// on the store's pool, for every run to come) and the workflow's
	// signature (what this process serves, recorded at its first trigger).
	delete(after, "dagen_partitions")
	delete(after, "dagen_signatures")
	require.Empty(t, after, "a rollback leaves nothing")
	_, err = st.GetRun(ctx, tr.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound)
}

// TestTriggerTxCommit: a run triggered in a transaction starts nothing
// before the commit, even on a started worker that serves it, and runs to
// its end after; the caller's row commits with it.
func TestTriggerTxCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := txStore(t)
	var ran atomic.Int64
	e := worker(t, st, "w", txDef(1, nil, &ran))

	tx, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "insert into orders (id) values ('o-1')")
	require.NoError(t, err)
	id, err := e.TriggerTx(ctx, tx, "order", "acme", keyedOrder{ID: "o-1", Amount: 5})
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // ten polls of the worker: none may find the run
	require.Zero(t, ran.Load(), "no step starts before the commit")
	_, err = st.GetRun(ctx, id)
	require.ErrorIs(t, err, store.ErrRunNotFound)
	require.NoError(t, tx.Commit(ctx))

	res, err := e.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, res.Status)
	require.Equal(t, int64(1), ran.Load())
	var orders int
	require.NoError(t, st.Pool().QueryRow(ctx, "select count(*) from orders").Scan(&orders))
	require.Equal(t, 1, orders)

	again, err := e.TriggerRun(ctx, "order", "acme", keyedOrder{ID: "o-1"})
	require.NoError(t, err)
	require.True(t, again.Duplicate, "the committed key is taken")
	require.Equal(t, id, again.ID)
}

// TestTriggerTxError: a trigger refused in the caller's transaction (its
// run's id exists already: the store's error, after statements were sent)
// leaves the transaction usable, with the caller's writes, and nothing
// of the run.
func TestTriggerTxError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := txStore(t)
	def := txDef(0, nil, new(atomic.Int64))
	def.Key, def.Timeout = nil, 0
	e, err := engine.New(st, nil)
	require.NoError(t, err)
	require.NoError(t, e.Register(def))
	id, err := e.Trigger(ctx, "order", "acme", keyedOrder{ID: "o-1"})
	require.NoError(t, err)
	run, err := st.GetRun(ctx, id)
	require.NoError(t, err)
	tasks, err := st.ListTasks(ctx, id)
	require.NoError(t, err)
	nr := store.NewRun{ID: id, Workflow: "order", Fingerprint: run.Fingerprint, Tenant: "acme", Input: run.Input}
	for _, tk := range tasks {
		nr.Tasks = append(nr.Tasks, store.NewTask{Name: tk.Name, Kind: tk.Kind, Signature: tk.Signature, MaxAttempts: 1})
	}

	tx, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "insert into orders (id) values ('o-1')")
	require.NoError(t, err)
	err = st.CreateRunsTx(ctx, tx, []store.NewRun{nr})
	require.ErrorIs(t, err, store.ErrRunExists)
	_, err = tx.Exec(ctx, "insert into orders (id) values ('o-2')")
	require.NoError(t, err, "the transaction is usable after the error, with the caller's search_path")
	require.NoError(t, tx.Commit(ctx))
	var orders, runs int
	require.NoError(t, st.Pool().QueryRow(ctx, "select count(*) from orders").Scan(&orders))
	require.NoError(t, st.Pool().QueryRow(ctx, "select count(*) from dagen_runs").Scan(&runs))
	require.Equal(t, 2, orders)
	require.Equal(t, 1, runs)
}

// TestTriggerTxOtherSearchPath: a caller's connection whose search_path
// does not name the store's schema triggers all the same: the store's
// statements run with its own, and the caller's is given back.
func TestTriggerTxOtherSearchPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := txStore(t)
	e, err := engine.New(st, nil)
	require.NoError(t, err)
	require.NoError(t, e.Register(txDef(0, nil, new(atomic.Int64))))
	conn, err := pgx.Connect(ctx, pgtest.URL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var callers string
	require.NoError(t, conn.QueryRow(ctx, "show search_path").Scan(&callers))

	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	id, err := e.TriggerTx(ctx, tx, "order", "acme", keyedOrder{ID: "o-1"})
	require.NoError(t, err)
	var now string
	require.NoError(t, tx.QueryRow(ctx, "show search_path").Scan(&now))
	require.Equal(t, callers, now)
	require.NoError(t, tx.Commit(ctx))
	_, err = st.GetRun(ctx, id)
	require.NoError(t, err)
}

// waitingOnLock waits until tx's session waits on a lock.
func waitingOnLock(t *testing.T, pool *pgxpool.Pool, tx pgx.Tx) {
	t.Helper()
	pid := tx.Conn().PgConn().PID()
	require.Eventually(t, func() bool {
		var n int
		err := pool.QueryRow(context.Background(),
			"select count(*) from pg_stat_activity where pid = $1 and wait_event_type = 'Lock'", pid).Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 5*time.Millisecond)
}

// TestTriggerTxKeyRace: two transactions trigger with one key. The second
// waits for the first's key; when the first commits, the second gets its
// run (Duplicate), and one run exists; when the first rolls back, the
// second starts the run.
func TestTriggerTxKeyRace(t *testing.T) {
	t.Parallel()
	for _, firstCommits := range []bool{true, false} {
		t.Run(fmt.Sprintf("first commits %v", firstCommits), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := txStore(t)
			e, err := engine.New(st, nil)
			require.NoError(t, err)
			require.NoError(t, e.Register(txDef(0, nil, new(atomic.Int64))))

			tx1, err := st.Pool().Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx1.Rollback(ctx) }()
			tx2, err := st.Pool().Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx2.Rollback(ctx) }()
			first, err := e.TriggerRunTx(ctx, tx1, "order", "acme", keyedOrder{ID: "o-1"})
			require.NoError(t, err)
			require.False(t, first.Duplicate)

			type result struct {
				tr  engine.Triggered
				err error
			}
			second := make(chan result, 1)
			go func() {
				tr, err := e.TriggerRunTx(ctx, tx2, "order", "acme", keyedOrder{ID: "o-1"})
				second <- result{tr, err}
			}()
			waitingOnLock(t, st.Pool(), tx2)
			select {
			case r := <-second:
				t.Fatalf("the second trigger returned before the first transaction ended: %+v", r)
			default:
			}
			if firstCommits {
				require.NoError(t, tx1.Commit(ctx))
			} else {
				require.NoError(t, tx1.Rollback(ctx))
			}
			r := <-second
			require.NoError(t, r.err)
			require.NoError(t, tx2.Commit(ctx))
			if firstCommits {
				require.True(t, r.tr.Duplicate)
				require.Equal(t, first.ID, r.tr.ID)
			} else {
				require.False(t, r.tr.Duplicate)
				require.NotEqual(t, first.ID, r.tr.ID)
			}
			var runs int
			require.NoError(t, st.Pool().QueryRow(ctx, "select count(*) from dagen_runs").Scan(&runs))
			require.Equal(t, 1, runs)
			_, err = st.GetRun(ctx, r.tr.ID)
			require.NoError(t, err)
		})
	}
}

// TestTriggerTxCap: a capped workflow (one run at once) admits in the
// caller's transaction: two runs triggered in two committed transactions,
// one runs and one waits QUEUED until the first ends.
func TestTriggerTxCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := txStore(t)
	release := make(chan struct{})
	var ran atomic.Int64
	e := worker(t, st, "w", txDef(1, release, &ran))
	var ids []dag.RunID
	for _, order := range []string{"o-1", "o-2"} {
		tx, err := st.Pool().Begin(ctx)
		require.NoError(t, err)
		id, err := e.TriggerTx(ctx, tx, "order", "acme", keyedOrder{ID: order})
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		ids = append(ids, id)
	}
	require.Eventually(t, func() bool { return ran.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
	statuses := func() []store.RunStatus {
		var out []store.RunStatus
		for _, id := range ids {
			r, err := st.GetRun(ctx, id)
			require.NoError(t, err)
			out = append(out, r.Status)
		}
		return out
	}
	require.Equal(t, []store.RunStatus{store.RunRunning, store.RunQueued}, statuses(), "the first admitted, the second waits")
	time.Sleep(30 * time.Millisecond)
	require.Equal(t, int64(1), ran.Load(), "the cap holds")
	close(release)
	for _, id := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
	}
	require.Equal(t, int64(2), ran.Load())
}

// TestSignalTx: a signal sent in a transaction that rolls back is not
// delivered (the wait still waits, no event says otherwise); sent in one
// that commits, it resolves the wait. A run triggered and signalled in one
// transaction holds the signal and uses it.
func TestSignalTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := txStore(t)
	var decided atomic.Int64
	e := worker(t, st, "w", approvalDef("approval", &decided))
	id, err := e.Trigger(ctx, "approval", "acme", 1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res, err := e.Result(ctx, id)
		return err == nil && res.Tasks["Approval"].Status == store.TaskAwaiting
	}, 10*time.Second, 5*time.Millisecond)
	eventsBefore, err := e.Events(ctx, id)
	require.NoError(t, err)

	tx, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, e.SignalTx(ctx, tx, "approval", id, "Approval", "ann"))
	require.NoError(t, tx.Rollback(ctx))
	res, err := e.Result(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.TaskAwaiting, res.Tasks["Approval"].Status)
	eventsAfter, err := e.Events(ctx, id)
	require.NoError(t, err)
	require.Equal(t, eventsBefore, eventsAfter, "a rolled-back signal logs nothing")

	tx, err = st.Pool().Begin(ctx)
	require.NoError(t, err)
	err = e.SignalTx(ctx, tx, "other", id, "Approval", "ann")
	require.ErrorIs(t, err, store.ErrNotSignal, "a run of another workflow")
	require.NoError(t, e.SignalTx(ctx, tx, "approval", id, "Approval", "bob"))
	require.NoError(t, tx.Commit(ctx))
	res, err = e.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "recorded:bob", output(t, res, "record"))

	// Triggered and signalled in one transaction: the signal is held.
	tx, err = st.Pool().Begin(ctx)
	require.NoError(t, err)
	id2, err := e.TriggerTx(ctx, tx, "approval", "acme", 2)
	require.NoError(t, err)
	require.NoError(t, e.SignalTx(ctx, tx, "approval", id2, "Approval", "cy"))
	err = e.SignalTx(ctx, tx, "approval", id2, "Approval", "dee")
	require.ErrorIs(t, err, store.ErrSignalHeld)
	require.NoError(t, tx.Commit(ctx), "the refused signal left the transaction usable")
	res, err = e.Wait(ctx, id2)
	require.NoError(t, err)
	require.Equal(t, "recorded:cy", output(t, res, "record"))
}

// TestTxMemstore: memstore has no part in a database transaction: the
// triggers in one refuse, with store.ErrNoTx, and write nothing.
func TestTxMemstore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(nil)
	var decided atomic.Int64
	e, err := engine.New(st, nil)
	require.NoError(t, err)
	require.NoError(t, e.Register(approvalDef("approval", &decided)))
	_, err = e.TriggerTx(ctx, nil, "approval", "acme", 1)
	require.ErrorIs(t, err, store.ErrNoTx)
	page, err := st.ListRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Empty(t, page.Runs)
	id, err := e.Trigger(ctx, "approval", "acme", 1)
	require.NoError(t, err)
	err = e.SignalTx(ctx, nil, "approval", id, "Approval", "ann")
	require.ErrorIs(t, err, store.ErrNoTx)
}

// TestTriggerTxKeyRaceRepeatableRead: in a REPEATABLE READ transaction, a
// key taken by a transaction that commits while this one waits for it is
// a serialization failure (SQLSTATE 40001), to retry, as the docs say;
// the transaction is left usable, and a retry in a new one finds the run.
func TestTriggerTxKeyRaceRepeatableRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := txStore(t)
	e, err := engine.New(st, nil)
	require.NoError(t, err)
	require.NoError(t, e.Register(txDef(0, nil, new(atomic.Int64))))
	tx1, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx1.Rollback(ctx) }()
	tx2, err := st.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = tx2.Rollback(ctx) }()
	first, err := e.TriggerRunTx(ctx, tx1, "order", "acme", keyedOrder{ID: "o-1"})
	require.NoError(t, err)
	errs := make(chan error, 1)
	go func() {
		_, err := e.TriggerRunTx(ctx, tx2, "order", "acme", keyedOrder{ID: "o-1"})
		errs <- err
	}()
	waitingOnLock(t, st.Pool(), tx2)
	require.NoError(t, tx1.Commit(ctx))
	var pgErr *pgconn.PgError
	require.ErrorAs(t, <-errs, &pgErr)
	require.Equal(t, "40001", pgErr.Code)
	var one int
	require.NoError(t, tx2.QueryRow(ctx, "select 1").Scan(&one), "the transaction is usable")
	require.NoError(t, tx2.Rollback(ctx))
	again, err := e.TriggerRun(ctx, "order", "acme", keyedOrder{ID: "o-1"})
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, first.ID, again.ID)
}

// TestTriggerTxAfterConnectPath: a store whose pool sets its search_path
// after connecting (not in its URL), and a caller's connection opened
// with the same URL, which lacks it: the trigger sets the store's before
// pgx describes its statements, which would fail on the caller's.
func TestTriggerTxAfterConnectPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	require.NoError(t, err)
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "set search_path = "+pgx.Identifier{schema}.Sanitize())
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	st, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	e, err := engine.New(st, nil)
	require.NoError(t, err)
	require.NoError(t, e.Register(txDef(1, nil, new(atomic.Int64))))

	conn, err := pgx.Connect(ctx, pgtest.URL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	id, err := e.TriggerTx(ctx, tx, "order", "acme", keyedOrder{ID: "o-1"})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	_, err = st.GetRun(ctx, id)
	require.NoError(t, err)
}
