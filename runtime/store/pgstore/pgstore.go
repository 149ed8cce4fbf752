package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/groupcommit"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/leasebook"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/maintenance"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/pipeline"
)

// Config configures a Store. The zero value (or a nil *Config) is ready to
// use.
type Config struct {
	// Now, when set, is the store's clock: every query uses it instead of
	// the database clock. Tests pass a fake clock. Nil means the database
	// clock, which is what production should use: wake times and leases
	// are then comparable across processes whatever their local clocks.
	Now func() time.Time
	// PartitionPeriod is the width, in time, of the ranges of run ids the
	// history tables are partitioned by (see PruneRuns): the leader makes
	// ranges this wide ahead, and drops a range's partitions once its runs
	// all finished before the retention cutoff. Zero or negative (the
	// default): half the retention, between [MinPartitionPeriod] and
	// [MaxPartitionPeriod], so a run is kept at most one and a half times
	// its retention (and a week) and a round of pruning.
	PartitionPeriod time.Duration
	// NotifyEvery is how often, at most, an enqueue into a queue that
	// holds work already notifies the listening workers (an enqueue into
	// an empty queue always does). Zero: [DefaultNotifyEvery]; negative:
	// every enqueue notifies.
	NotifyEvery time.Duration
	// SessionURL is a connection string to the same database (and
	// search_path) by a path that keeps a session across transactions: a
	// direct connection, or a session-pooling PgBouncer. The store's
	// LISTEN connection uses it, so that notifications of ready work and
	// of cancellations arrive however the pool connects. Empty: the store
	// listens on a connection of its pool when the pool reaches Postgres
	// itself, and not at all behind a connection pooler, where workers
	// then poll (see [ErrNoSession]). Leadership needs no session (see
	// [Store.Lead]).
	SessionURL string
}

// Store is a store.Store on Postgres. It is safe for concurrent use by many
// goroutines and many processes sharing one database schema.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
	now  func() time.Time

	notifyEvery time.Duration // Config.NotifyEvery
	lastNotify  atomic.Int64  // unix nanoseconds of the last forced notification
	// flow is set once the schema has run priorities or rate limits
	// (dagen_flow_flags): claims then take ClaimTasksFlow (claimRows).
	flow     atomic.Bool
	flowRead atomic.Int64 // unix nanoseconds of the last read of the flags
	floor    claimFloor   // where claims begin reading the queue
	owned    bool         // Close closes the pool

	leader leader
	leases leasebook.Book // the leases and views of this store's claims, until answered

	// Maintenance (see noteQueued, PruneRuns and CloseContext).
	parts  *maintenance.Partitions // the history tables' ranges of run ids
	stats  *maintenance.Stats      // the planner's statistics, by growth
	vacuum *maintenance.Vacuum     // the queue tables' vacuum, by volume

	listener listener        // Subscribe's and SubscribeCancels' connection
	session  *pgx.ConnConfig // Config.SessionURL, parsed; nil when none
	direct   bool            // the pool's connections reach Postgres itself (reachesServer)
	// cachesPlans: the pool prepares named statements, whose plans
	// Postgres caches on the connection (pgx's QueryExecModeCacheStatement).
	// Otherwise (behind a transaction pooler) each execution is planned
	// anyway, and the statements that choose between a cached plan and a
	// new one (KeepGenericPlan, PlanEachExecution, FindByIndexBegin) are
	// left out.
	cachesPlans bool
	searchPath  string            // the pool's schemas, for a caller's transaction (inCallerTx)
	sweep       sweeper           // rate-limits sweepSlots
	creates     groupcommit.Group // CreateRuns calls made at once share a transaction
	buckets     knownBuckets      // the rate limits' buckets known to exist (ensureBuckets)
}

var _ store.Store = (*Store)(nil)

// New returns a store over pool. cfg may be nil.
//
// The schema of pool's search_path must be at the version this binary
// needs: migrate it first with [Migrate] or "dagen migrate up". New checks
// that at once, so an unmigrated, older or newer schema fails here, with
// an error wrapping [ErrSchemaVersion] (and [ErrSchemaTooNew] for a newer
// one) that names both versions, rather than on the first query.
//
// A pool through PgBouncer in transaction mode must not use pgx's default
// QueryExecModeCacheStatement, whose named statements another server
// connection lacks: set default_query_exec_mode=cache_describe (or exec)
// in its URL, or use [OpenConfig], which does. New asks the server once
// whether the pool reaches it directly, to know whether it may LISTEN on
// the pool (see [Config.SessionURL]).
func New(ctx context.Context, pool *pgxpool.Pool, cfg *Config) (*Store, error) {
	st, err := MigrationStatus(ctx, pool)
	if err != nil {
		return nil, err
	}
	if err := st.Err(); err != nil {
		return nil, err
	}
	s := &Store{pool: pool, q: dbsqlc.New(), notifyEvery: DefaultNotifyEvery}
	s.leader.holder = newHolder()
	s.cachesPlans = pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
	var period time.Duration
	if cfg != nil {
		s.now, period = cfg.Now, cfg.PartitionPeriod
		if cfg.NotifyEvery != 0 {
			s.notifyEvery = cfg.NotifyEvery
		}
		if cfg.SessionURL != "" {
			if s.session, err = sessionConfig(cfg.SessionURL, pool); err != nil {
				return nil, err
			}
			if err := s.checkSession(ctx); err != nil {
				return nil, err
			}
		}
	}
	if s.session == nil {
		if s.direct, err = probeSession(ctx, pool); err != nil {
			return nil, fmt.Errorf("pgstore: %w", err)
		}
	}
	if err := pool.QueryRow(ctx, searchPathQuery).Scan(&s.searchPath); err != nil {
		return nil, fmt.Errorf("pgstore: read the search_path: %w", err)
	}
	s.parts = maintenance.NewPartitions(pool, s.now, period)
	s.stats = maintenance.NewStats(pool, s.now)
	s.vacuum = maintenance.NewVacuum(pool)
	return s, nil
}

// MinPartitionPeriod and MaxPartitionPeriod bound the width of a new range
// of the history tables when it is chosen from the retention
// ([Config.PartitionPeriod]).
const (
	MinPartitionPeriod = maintenance.MinPartitionPeriod
	MaxPartitionPeriod = maintenance.MaxPartitionPeriod
)

// DefaultConnectTimeout bounds how long [Open] waits for the database.
const DefaultConnectTimeout = 10 * time.Second

// Open is OpenConfig with no Config.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenConfig(ctx, url, nil)
}

// OpenConfig connects to the database at url (a postgres:// URL or a
// key=value connection string, with several hosts and
// target_session_attrs=read-write for a primary that fails over), checks
// that it answers within [DefaultConnectTimeout] (or the URL's
// connect_timeout), migrates its schema and returns a store that owns the
// pool: call [Store.Close]. cfg may be nil; cfg.Now is for tests.
//
// Behind a connection pooler (PgBouncer in transaction mode: the server
// sees the pooler as its client), the pool runs statements in pgx's
// QueryExecModeCacheDescribe, which prepares no named statement that
// another server connection would lack, unless url sets
// default_query_exec_mode itself ([OpenPool]). For a pool of your own,
// use [New].
func OpenConfig(ctx context.Context, url string, cfg *Config) (*Store, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse database URL: %w", err)
	}
	pool, err := OpenPool(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s, err := New(ctx, pool, cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// OpenPool opens a pool with pcfg for a store ([New]) or a tool: it
// connects once, within [DefaultConnectTimeout] (or pcfg's
// connect_timeout), and when the server sees a connection pooler rather
// than this process as its client, it runs pgx in
// QueryExecModeCacheDescribe, which prepares no named statement that
// another server connection would lack, unless pcfg's connection string
// chose a mode. Its connections close themselves when their server no
// longer accepts writes ([ReconnectWhenReadOnly]).
func OpenPool(ctx context.Context, pcfg *pgxpool.Config) (*pgxpool.Pool, error) {
	timeout := pcfg.ConnConfig.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
		pcfg.ConnConfig.ConnectTimeout = timeout
	}
	pingCtx, cancel := context.WithTimeout(ctx, timeout)
	direct, err := probeURL(pingCtx, pcfg.ConnConfig)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect to %s:%d (timeout %s): %w",
			pcfg.ConnConfig.Host, pcfg.ConnConfig.Port, timeout, err)
	}
	if !direct && !explicitExecMode(pcfg.ConnString()) {
		pcfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	ReconnectWhenReadOnly(pcfg)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open pool for %s: %w", pcfg.ConnConfig.Host, err)
	}
	return pool, nil
}

// probeURL connects once with cfg and reports whether the connection
// reaches Postgres itself (reachesServer).
func probeURL(ctx context.Context, cfg *pgx.ConnConfig) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return reachesServer(ctx, conn)
}

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// DefaultCloseTimeout bounds how long [Store.Close] waits for the pool's
// connections to come back.
const DefaultCloseTimeout = 5 * time.Second

// Close is CloseContext with [DefaultCloseTimeout]: it returns within
// that time whatever the database does.
func (s *Store) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultCloseTimeout)
	defer cancel()
	_ = s.CloseContext(ctx)
}

// CloseContext gives up leadership, if held (one statement, bounded by
// ctx), waits for a refresh of the planner's statistics and a vacuum of
// the queue under way (see noteQueued), and closes the pool if the store
// opened it ([Open]); a pool passed to [New] belongs to the caller and is
// left open.
// Closing the pool waits for the connections in use to come back; when ctx
// ends first, CloseContext returns an error and the pool finishes closing
// in the background, as the queries holding its connections end.
func (s *Store) CloseContext(ctx context.Context) error {
	_ = s.Resign(ctx)
	// A refresh of the planner's statistics or a vacuum under way uses
	// the pool: it ends before the pool closes, or with the pool when ctx
	// ends first.
	refreshed := make(chan struct{})
	go func() {
		s.stats.Wait()
		s.vacuum.Wait()
		close(refreshed)
	}()
	select {
	case <-refreshed:
	case <-ctx.Done():
	}
	if !s.owned {
		return nil
	}
	closed := make(chan struct{})
	go func() {
		s.pool.Close()
		close(closed)
	}()
	select {
	case <-closed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pgstore: close: %d connections still in use: %w", s.pool.Stat().AcquiredConns(), ctx.Err())
	}
}

// clock returns the store's clock as a query parameter: NULL means the
// database clock.
func (s *Store) clock() pgtype.Timestamptz {
	if s.now == nil {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: s.now(), Valid: true}
}

// noteQueued records that n tasks were created or enqueued: every so many,
// the queue tables are vacuumed and the planner's statistics refreshed,
// in the background (maintenance.Vacuum and maintenance.Stats).
func (s *Store) noteQueued(ctx context.Context, n int) {
	s.vacuum.Note(ctx, n)
	s.stats.Note(ctx, n)
}

// keepGenericPlan queues KeepGenericPlan on db when the pool caches
// plans (see cachesPlans).
func (s *Store) keepGenericPlan(ctx context.Context, db dbsqlc.DBTX) error {
	if !s.cachesPlans {
		return nil
	}
	return s.q.KeepGenericPlan(ctx, db)
}

// deleteLeases runs DeleteLeases on db between FindByIndexBegin and
// FindByIndexEnd (see planned): the plan the connection keeps for it then
// finds leases by key, however small the table was when it was made. The
// setting holds for DeleteLeases alone: a statement planned under it keeps
// that plan (one planned with sequential scans costed out may read a table
// a row at a time where a scan is cheaper), and statements follow it (a
// completion's child runs are created after its leases end).
func (s *Store) deleteLeases(ctx context.Context, db dbsqlc.DBTX, ids, tokens []int64) error {
	return s.planned(ctx, db, s.q.FindByIndexBegin, s.q.FindByIndexEnd, func(db dbsqlc.DBTX) error {
		return s.q.DeleteLeases(ctx, db, ids, tokens)
	})
}

// planned runs stmt on db between begin and end, statements that set how
// Postgres plans and set it back (GenericPlanBegin/End,
// FindByIndexBegin/End), when the pool caches plans (see cachesPlans) and
// only where the two cost no round trip: on a pipeline (every transaction
// of the store's own is one). Queued, begin and end cannot fail there: a
// failure is stmt's, or the transaction's.
func (s *Store) planned(ctx context.Context, db dbsqlc.DBTX, begin, end func(context.Context, dbsqlc.DBTX) error, stmt func(dbsqlc.DBTX) error) error {
	q, ok := db.(pipeline.Queuer)
	if !ok || !s.cachesPlans {
		return stmt(db)
	}
	_ = begin(ctx, q)
	err := stmt(q)
	_ = end(ctx, q)
	return err
}

// planEachExecution queues PlanEachExecution on db when the pool caches
// plans (see cachesPlans).
func (s *Store) planEachExecution(ctx context.Context, db dbsqlc.DBTX) error {
	if !s.cachesPlans {
		return nil
	}
	return s.q.PlanEachExecution(ctx, db)
}

// inTx runs fn in a pipelined transaction (pipeline.InTx) and commits it
// if fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *pipeline.Tx) error) error {
	return pipeline.InTx(ctx, s.pool, fn, nil)
}

// errNothingToDo makes inTx roll back a transaction that changed nothing.
var errNothingToDo = errors.New("nothing to do")

func uuidOf(id dag.RunID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: true} }

func uuids(ids []dag.RunID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = uuidOf(id)
	}
	return out
}

func tstz(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time
}

func takeTimersParams(ids []dag.RunID, names []string, now time.Time) dbsqlc.TakeTimersParams {
	return dbsqlc.TakeTimersParams{RunIds: uuids(ids), Tasks: names, Now: tstz(now)}
}

// uuidsOf converts run ids for a uuid[] parameter: never nil, which pgx
// would send as NULL.
func uuidsOf(ids []dag.RunID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = uuidOf(id)
	}
	return out
}
