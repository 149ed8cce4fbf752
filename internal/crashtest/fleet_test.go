package crashtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/crashtest/flow"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// The fleet: fleetWorkers processes of fleetConcurrency slots each, on one
// PgBouncer in transaction mode, on one Postgres that accepts
// fleetMaxConns connections. The workers' pools (fleetPoolConns each) ask
// PgBouncer for more than the server could take; PgBouncer's pool
// (fleetBouncerPool) keeps the server's share under 90, with room for the
// test's own connections and the server's background processes.
const (
	fleetWorkers     = 50
	fleetConcurrency = 64
	fleetPoolConns   = 4
	fleetBouncerPool = 75
	fleetMaxConns    = 100
	fleetRuns        = 300
	// fleetHeartbeat is the workers' heartbeat interval, the engine's
	// default (a third of the default lease), given explicitly so that the
	// test knows how many heartbeats to expect.
	fleetHeartbeat = 10 * time.Second
	// fleetIdleBudget is what an idle worker may cost the database, in
	// statements a second, the leader's housekeeping shared by all.
	fleetIdleBudget = 2.0
)

// refused are what Postgres and PgBouncer say when they turn a client
// away for want of connections.
var refused = []string{
	"too many connections", "too many clients", "remaining connection slots",
	"no more connections allowed", "query_wait_timeout",
}

// fleetIdle is how long TestFleetQuietWhenIdle measures an idle fleet:
// DAGEN_FLEET_IDLE, 15s by default (DAGEN_FLEET_IDLE=60s go test -run
// TestFleet ./internal/crashtest for the long variant).
func fleetIdle(t *testing.T) time.Duration {
	s := os.Getenv("DAGEN_FLEET_IDLE")
	if s == "" {
		return 15 * time.Second
	}
	d, err := time.ParseDuration(s)
	require.NoError(t, err, "DAGEN_FLEET_IDLE must be a duration, like 60s")
	require.GreaterOrEqual(t, d, 5*time.Second, "DAGEN_FLEET_IDLE must be at least 5s")
	return d
}

// TestFleetQuietWhenIdle runs a fleet of worker processes through one
// PgBouncer (transaction mode, so the workers poll, with no LISTEN, and
// lead by a lease row) against a Postgres with max_connections=100. Under
// load, every run of the crash flow completes, fan-in included, the
// server never runs out of connections and no worker dies. Then, with no
// work at all, the fleet must be quiet: at most fleetIdleBudget statements
// a second per worker, of which about one heartbeat per worker per
// heartbeat interval.
func TestFleetQuietWhenIdle(t *testing.T) {
	idleFor := fleetIdle(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute+idleFor)
	defer cancel()

	pg := pgtest.NewPrimary(t, pgtest.ClusterOptions{Settings: map[string]string{
		"max_connections":          fmt.Sprint(fleetMaxConns),
		"shared_preload_libraries": "pg_stat_statements",
		"pg_stat_statements.track": "all",
	}})
	pg.CreateDatabase(t, "dagen")
	// The test watches from the postgres database: what it asks there is
	// not the fleet's load.
	watch := pg.Conn(t, "postgres")
	defer watch.Close(context.Background())
	_, err := watch.Exec(ctx, `CREATE EXTENSION pg_stat_statements`)
	require.NoError(t, err)
	var dagenDB uint32
	require.NoError(t, watch.QueryRow(ctx, `SELECT oid FROM pg_database WHERE datname = 'dagen'`).Scan(&dagenDB))

	// The test's own pool to dagen: it migrates, creates the log table and
	// triggers runs, directly, with few connections.
	pool, err := pgxpool.New(ctx, pg.URL("dagen")+"&pool_max_conns=4")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	_, err = pool.Exec(ctx, execTable)
	require.NoError(t, err)
	st, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	trigger, err := engine.New(st, &engine.Config{Manual: true})
	require.NoError(t, err)
	wf, err := flow.NewJobWorkflow(trigger)
	require.NoError(t, err)

	bouncer := pgtest.StartPgBouncer(t, pgtest.PgBouncerOptions{
		Server:          fmt.Sprintf("127.0.0.1:%d", pg.Port()),
		DefaultPoolSize: fleetBouncerPool,
		MaxClientConn:   2 * fleetWorkers * fleetPoolConns,
	})
	// Only the PgBouncer URL: pgstore finds the pooler itself.
	url := bouncer.URL("dagen") + fmt.Sprintf("&pool_max_conns=%d", fleetPoolConns)
	fleet := startFleet(t, url, fleetWorkers,
		"-open-pool", "-concurrency", fmt.Sprint(fleetConcurrency),
		"-lease", (3 * fleetHeartbeat).String(), "-heartbeat", fleetHeartbeat.String(), "-poll", "0")
	fleet.waitStarted(ctx, 30*time.Second)
	t.Logf("%d workers started after %s", fleetWorkers, time.Since(began).Round(time.Millisecond))

	// Load: trigger every run, watch the server's connections until all
	// have finished.
	conns := watchConnections(ctx, t, pg, dagenDB)
	loadBegan := time.Now()
	for i := range fleetRuns {
		_, err := wf.Start(ctx, fmt.Sprintf("tenant-%d", i%7), flow.Job{N: i, Work: 20 * time.Millisecond, Nap: 200 * time.Millisecond})
		require.NoError(t, err)
	}
	// 30 s alone; minutes when make test runs other packages beside it
	// (once over 150 s).
	waitFleetLoad(ctx, t, pool, 200*time.Second)
	seen := conns.stop()
	t.Logf("load: %d runs on %d workers in %s; the server saw at most %d connections (%d client backends, %d on dagen)",
		fleetRuns, fleetWorkers, time.Since(loadBegan).Round(time.Millisecond), seen.total, seen.clients, seen.dagen)
	require.Less(t, seen.total, fleetMaxConns, "the server's connections, background processes included, stay below max_connections")

	var completed, joins, joinRuns int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM dagen_runs WHERE status = 'COMPLETED'`).Scan(&completed))
	require.Equal(t, fleetRuns, completed, "every run completes")
	require.NoError(t, pool.QueryRow(ctx,
		`SELECT count(*), count(DISTINCT run_id) FROM crash_exec WHERE step = 'Join' AND phase = 'end'`).Scan(&joins, &joinRuns))
	require.Equal(t, fleetRuns, joinRuns, "the fan-in ran in every run")
	require.Equal(t, fleetRuns, joins, "the fan-in ran once a run")
	fleet.requireAlive()

	// Idle: no work at all. Let the workers back off to their idle poll,
	// then count what they ask of the dagen database.
	time.Sleep(5 * time.Second)
	_, err = watch.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	require.NoError(t, err)
	idleBegan := time.Now()
	time.Sleep(idleFor)
	stats := idleStatements(ctx, t, watch, dagenDB)
	measured := time.Since(idleBegan)
	fleet.requireAlive()

	var calls, companions, beats int64
	for _, s := range stats {
		calls += s.calls
		// KeepGenericPlan goes with each claim, in its round trip.
		if strings.Contains(s.query, "-- name: KeepGenericPlan ") {
			companions += s.calls
		}
		// The Heartbeat statement of queries/workers.sql: its upsert of
		// the worker's row (a deploy's names more columns).
		if strings.Contains(s.query, "INSERT INTO dagen_workers (id, heartbeat_at, alive_until)") {
			beats += s.calls
		}
	}
	secs := measured.Seconds()
	perWorker := float64(calls) / secs / fleetWorkers
	t.Logf("idle for %s: %d statements on dagen, %.2f a second per worker (budget %.1f); %.2f without KeepGenericPlan, which shares the claim's round trip",
		measured.Round(time.Millisecond), calls, perWorker, fleetIdleBudget, float64(calls-companions)/secs/fleetWorkers)
	for i, s := range stats {
		if i == 20 {
			break
		}
		t.Logf("  %6d calls  %6.2f/s  %5.3f/s a worker  %s", s.calls, float64(s.calls)/secs, float64(s.calls)/secs/fleetWorkers, s.name())
	}
	expected := float64(fleetWorkers) * secs / fleetHeartbeat.Seconds()
	t.Logf("heartbeats: %d, expected about %.0f (%d workers, one each %s)", beats, expected, fleetWorkers, fleetHeartbeat)

	fleet.stop()
	for _, w := range fleet.workers {
		requireNotRefused(t, "worker "+w.id, w.out.String())
	}
	requireNotRefused(t, "PgBouncer's log", bouncer.Log())
	requireNotRefused(t, "the Postgres server's log", pg.Log(t))
	t.Logf("the test took %s", time.Since(began).Round(time.Millisecond))

	assert.LessOrEqual(t, perWorker, fleetIdleBudget, "an idle worker's statements a second")
	assert.GreaterOrEqual(t, float64(beats), expected/2, "heartbeats while idle")
	assert.LessOrEqual(t, float64(beats), expected*2, "heartbeats while idle")
}

func requireNotRefused(t *testing.T, where, log string) {
	t.Helper()
	lower := strings.ToLower(log)
	for _, s := range refused {
		if i := strings.Index(lower, s); i >= 0 {
			line := log[strings.LastIndex(log[:i], "\n")+1:]
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
			}
			t.Errorf("%s says %q: %s", where, s, line)
		}
	}
}

// statement is one row of pg_stat_statements.
type statement struct {
	query string
	calls int64
}

// name is the statement's sqlc name when it has one, else its first line.
func (s statement) name() string {
	q := strings.TrimSpace(s.query)
	if rest, ok := strings.CutPrefix(q, "-- name: "); ok {
		q = rest
	}
	if i := strings.IndexByte(q, '\n'); i >= 0 {
		q = q[:i]
	}
	if len(q) > 90 {
		q = q[:90] + "…"
	}
	return q
}

// idleStatements reads what pg_stat_statements counted on database db,
// most called first.
func idleStatements(ctx context.Context, t *testing.T, conn *pgx.Conn, db uint32) []statement {
	rows, err := conn.Query(ctx,
		`SELECT query, sum(calls)::bigint FROM pg_stat_statements WHERE dbid = $1 GROUP BY query ORDER BY 2 DESC, 1`, db)
	require.NoError(t, err)
	var out []statement
	for rows.Next() {
		var s statement
		require.NoError(t, rows.Scan(&s.query, &s.calls))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// connections is the most the server saw at once.
type connections struct{ total, clients, dagen int }

type connWatch struct {
	stopc chan struct{}
	done  chan connections
}

// watchConnections samples pg_stat_activity now and then, on a
// connection of its own, until stop.
func watchConnections(ctx context.Context, t *testing.T, pg *pgtest.Cluster, db uint32) *connWatch {
	conn := pg.Conn(t, "postgres")
	w := &connWatch{stopc: make(chan struct{}), done: make(chan connections, 1)}
	go func() {
		defer conn.Close(context.Background())
		var most connections
		for {
			var c connections
			err := conn.QueryRow(ctx, `
				SELECT count(*), count(*) FILTER (WHERE backend_type = 'client backend'),
				       count(*) FILTER (WHERE datid = $1)
				FROM pg_stat_activity`, db).Scan(&c.total, &c.clients, &c.dagen)
			if err == nil {
				most.total, most.clients, most.dagen = max(most.total, c.total), max(most.clients, c.clients), max(most.dagen, c.dagen)
			}
			select {
			case <-w.stopc:
				w.done <- most
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *connWatch) stop() connections {
	close(w.stopc)
	return <-w.done
}

// fleet is the worker processes of TestFleetQuietWhenIdle.
type fleet struct {
	t       *testing.T
	workers []*fleetWorker
}

type fleetWorker struct {
	id     string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// syncBuffer is a buffer a process writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startFleet starts n worker processes on url; they are stopped when the
// test ends, and their output logged if it failed.
func startFleet(t *testing.T, url string, n int, args ...string) *fleet {
	bin, err := buildWorker()
	require.NoError(t, err)
	f := &fleet{t: t}
	t.Cleanup(func() {
		f.stop()
		if t.Failed() {
			for _, w := range f.workers {
				if out := unexpected(w.out.String()); out != "" {
					t.Logf("--- worker %s:\n%s", w.id, tail(out, 1500))
				}
			}
		}
	})
	for i := range n {
		w := &fleetWorker{id: fmt.Sprintf("fleet-%02d", i), out: &syncBuffer{}, exited: make(chan struct{})}
		w.cmd = exec.Command(bin, append([]string{"-url", url, "-id", w.id}, args...)...)
		w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
		require.NoError(t, w.cmd.Start())
		go func() { _ = w.cmd.Wait(); close(w.exited) }()
		f.workers = append(f.workers, w)
	}
	return f
}

// unexpected is a worker's output but for what every worker of the fleet
// says: that it started, and that it polls, behind PgBouncer.
func unexpected(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if line == "" || strings.HasSuffix(line, " started") || strings.Contains(line, "notifications unavailable") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// waitStarted waits until every worker says it started.
func (f *fleet) waitStarted(ctx context.Context, within time.Duration) {
	deadline := time.Now().Add(within)
	for _, w := range f.workers {
		for !strings.Contains(w.out.String(), " started\n") {
			select {
			case <-w.exited:
				f.t.Fatalf("worker %s exited before it started: %s", w.id, w.out.String())
			case <-ctx.Done():
				f.t.Fatalf("waiting for worker %s: %v", w.id, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				f.t.Fatalf("worker %s did not start within %s: %s", w.id, within, w.out.String())
			}
		}
	}
}

// requireAlive fails the test if a worker exited.
func (f *fleet) requireAlive() {
	f.t.Helper()
	for _, w := range f.workers {
		select {
		case <-w.exited:
			f.t.Fatalf("worker %s exited (%v): %s", w.id, w.cmd.ProcessState, tail(w.out.String(), 3000))
		default:
		}
	}
}

// stop SIGTERMs every worker still running and waits for it, killing
// those that take over 10s.
func (f *fleet) stop() {
	for _, w := range f.workers {
		select {
		case <-w.exited:
		default:
			_ = w.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, w := range f.workers {
		select {
		case <-w.exited:
		case <-time.After(10 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.exited
		}
	}
}

// waitFleetLoad waits until every run of the dagen database has ended,
// logging how many are left every 30 s; after within, it fails the test
// with what the runs left and their tasks are doing, so that a slow fleet
// can be told from a stuck one.
func waitFleetLoad(ctx context.Context, t *testing.T, pool *pgxpool.Pool, within time.Duration) {
	t.Helper()
	const open = `SELECT count(*) FROM dagen_runs WHERE status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED')`
	deadline, logAt := time.Now().Add(within), time.Now().Add(30*time.Second)
	for {
		var left int
		require.NoError(t, pool.QueryRow(ctx, open).Scan(&left))
		if left == 0 {
			return
		}
		if now := time.Now(); now.After(deadline) {
			rows, err := pool.Query(ctx, `
				SELECT r.status || ' run, ' || t.status || ' task ' || t.name || ': ' || count(*) || ', attempts up to ' || max(t.attempt) ||
				       coalesce(', on ' || string_agg(DISTINCT nullif(t.worker, ''), ' ') FILTER (WHERE t.status = 'RUNNING'), '')
				FROM dagen_runs r JOIN dagen_tasks t ON t.run_id = r.id
				WHERE r.status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED')
				GROUP BY r.status, t.status, t.name
				ORDER BY 1`)
			require.NoError(t, err)
			states, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			t.Fatalf("%d runs unfinished after %s; their tasks:\n%s\n%s", left, within, strings.Join(states, "\n"), fleetQueue(ctx, t, pool))
		} else if now.After(logAt) {
			t.Logf("%d runs unfinished", left)
			logAt = now.Add(30 * time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fleetQueue says, for a fleet that left runs unfinished, where their
// QUEUED tasks are: their rows in the ready queue, whether a claim could
// lock them now (a row another transaction holds is skipped by every
// claim), the queue's frontier; how many of their RUNNING tasks no lease
// covers (a result taken for stale left such tasks: see pgstore's
// TestCompletionsLockRunsAcrossRanges); and the sessions in a transaction.
func fleetQueue(ctx context.Context, t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var b strings.Builder
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `
		SELECT 'task ' || t.run_id || '/' || t.name || ' queued at ' || coalesce(t.queued_at::text, '-') ||
		       coalesce(': ready row ' || q.id || ' (block ' || q.id / 1048576 || ', group ' || q.id % 1048576 || ', signature ' || q.signature || ')', ': no ready row') ||
		       CASE WHEN q.id IS NULL THEN ''
		            WHEN EXISTS (SELECT 1 FROM dagen_ready l WHERE l.id = q.id FOR UPDATE SKIP LOCKED) THEN ', lockable'
		            ELSE ', locked by another transaction' END
		FROM dagen_tasks t
		JOIN dagen_runs r ON r.id = t.run_id
		LEFT JOIN dagen_ready q ON q.run_id = t.run_id AND q.task = t.name
		WHERE r.status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED') AND t.status = 'QUEUED'
		ORDER BY 1`)
	require.NoError(t, err)
	tasks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	b.WriteString(strings.Join(tasks, "\n"))
	var frontier, ready, unleased int64
	require.NoError(t, tx.QueryRow(ctx, `SELECT (SELECT block FROM dagen_queue_frontier), (SELECT count(*) FROM dagen_ready),
		(SELECT count(*) FROM dagen_tasks t JOIN dagen_runs r ON r.id = t.run_id
		 WHERE r.status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED') AND t.status = 'RUNNING'
		   AND NOT EXISTS (SELECT 1 FROM dagen_leases l WHERE t.started_event = ANY(l.events)))`).Scan(&frontier, &ready, &unleased))
	fmt.Fprintf(&b, "\nfrontier block %d; %d rows in the ready queue; %d RUNNING tasks of these runs in no lease (nobody rescues them)", frontier, ready, unleased)
	rows, err = tx.Query(ctx, `
		SELECT pid || ' ' || state || ' since ' || coalesce((now() - xact_start)::text, '-') || ': ' || left(query, 120)
		FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
		ORDER BY xact_start`)
	require.NoError(t, err)
	open, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	fmt.Fprintf(&b, "\nsessions in a transaction: %d\n%s", len(open), strings.Join(open, "\n"))
	return b.String()
}
