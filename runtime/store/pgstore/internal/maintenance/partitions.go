package maintenance

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// The history tables (dagen_runs, dagen_tasks, dagen_events) are
// partitioned by ranges of run id, which are ranges of time: a UUIDv7
// begins with the millisecond it was made (migrations 009 and 010 say
// more). Every id must have a range: the leader's PruneRuns makes them
// ahead and drops old ones whole, and a creation whose id has none makes
// one (coverRuns).
const (
	// MinPartitionPeriod and MaxPartitionPeriod bound the width of a new
	// range when it is chosen from the retention (pgstore's
	// Config.PartitionPeriod).
	MinPartitionPeriod = time.Minute
	MaxPartitionPeriod = 7 * 24 * time.Hour

	// partitionsAhead is how many periods past now the ranges reach: a
	// leader that misses a few rounds of pruning leaves no id without one.
	partitionsAhead = 3
	// partitionGrace is how long after a range ends it is kept at least:
	// ids are made by the workers' clocks, which may be a little behind.
	// (A drop checks for late runs once the range is detached, and
	// attaches it again when it finds one.)
	partitionGrace = 10 * time.Second
	// attachLockTimeout bounds the wait for the lock that attaching and
	// detaching take on a history table, SHARE UPDATE EXCLUSIVE: only
	// vacuum, analyze and other DDL hold it, never the engine's queries.
	// detachTimeout bounds a concurrent detach's wait for the transactions
	// that began before it (the engine's are short); one that gives up is
	// finished at the next round.
	attachLockTimeout = "5s"
	detachTimeout     = "30s"
	// maxNewPartitions bounds the ranges made in one round.
	maxNewPartitions = 16
)

// historyTables are the partitioned tables, in the order their partitions
// are made, with each new partition's storage settings (those migration
// 011 gives the ranges that exist: room on each page for the updates that
// the rows inserted together take, so that they stay HOT).
var historyTables = []struct{ name, with string }{
	{"dagen_runs", " WITH (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 45)"},
	{"dagen_tasks", " WITH (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 35)"},
	{"dagen_events", ""},
}

// Partitions keeps the ranges of run ids the history tables are
// partitioned by: the leader's rounds make them ahead and drop those whose
// runs all finished before the retention (Maintain), and a creation whose
// run id no range holds gets one (WithRanges).
type Partitions struct {
	pool   *pgxpool.Pool
	q      *dbsqlc.Queries
	now    func() time.Time // the store's clock, nil for this process's: see idClock
	period time.Duration    // the configured width of new ranges, or 0

	// lastPeriod is the width, in nanoseconds, of the leader's last ranges
	// (0 before its first round): the width of a range made for a creation.
	lastPeriod atomic.Int64
}

// NewPartitions returns the keeper of the ranges of pool's schema. now is
// the store's clock (Config.Now), nil for this process's, which makes the
// run ids; period is Config.PartitionPeriod (see Period).
func NewPartitions(pool *pgxpool.Pool, now func() time.Time, period time.Duration) *Partitions {
	return &Partitions{pool: pool, q: dbsqlc.New(), now: now, period: period}
}

// Period is the width of the ranges a round with this cutoff makes (see
// partitionPeriod), at the time of run ids.
func (pt *Partitions) Period(cutoff time.Time) time.Duration {
	return pt.partitionPeriod(idClock(pt.now), cutoff)
}

// partitionPeriod is the width of new ranges: the configured one, or half
// the retention, between MinPartitionPeriod and MaxPartitionPeriod. A run
// is then kept for its retention and at most one period and a round more.
// The width is rounded to the second: a caller's cutoff, taken a moment
// before this call's now, must not make ranges of 30m0.001s.
func (pt *Partitions) partitionPeriod(now, cutoff time.Time) time.Duration {
	if pt.period > 0 {
		return pt.period
	}
	return min(max(now.Sub(cutoff)/2, MinPartitionPeriod), MaxPartitionPeriod).Round(time.Second)
}

// idClock is the time of run ids: the store's clock now when it has one
// (tests), else this process's, which makes the ids.
func idClock(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}

// Maintain makes the ranges up to partitionsAhead periods past now, then
// drops every range that ended partitionGrace ago and whose runs all
// finished before cutoff, and finishes the drops that began before. It
// returns how many runs it dropped. The leader calls it (PruneRuns).
func (pt *Partitions) Maintain(ctx context.Context, cutoff time.Time) (int, error) {
	parts, err := pt.q.ListPartitions(ctx, pt.pool)
	if err != nil {
		return 0, fmt.Errorf("list partitions: %w", err)
	}
	now := idClock(pt.now)
	period := pt.partitionPeriod(now, cutoff)
	pt.lastPeriod.Store(int64(period))
	if err := pt.makePartitions(ctx, now, period); err != nil {
		return 0, err
	}
	end := uuidAt(now.Add(-partitionGrace))
	dropped := 0
	for _, p := range parts {
		if !p.Dropping && !uuidLess(p.ToID.Bytes, end) {
			continue
		}
		n, err := pt.dropPartition(ctx, p, cutoff)
		if err != nil {
			return dropped, err
		}
		dropped += n
	}
	return dropped, nil
}

// makePartitions adds ranges of period after the last one until they
// reach partitionsAhead periods past now. A new range starts where the
// last ends, or at now when that is past (a new schema, or a leader back
// after a long stop): the ids of the gap get ranges when they are made
// (coverRuns). A lock that is not free in time ends the round early: the
// next looks again.
func (pt *Partitions) makePartitions(ctx context.Context, now time.Time, period time.Duration) error {
	horizon := now.Truncate(time.Millisecond).Add(partitionsAhead * period)
	for range maxNewPartitions {
		made, err := pt.makeRange(ctx, func(parts []dbsqlc.DagenPartition) (from, to time.Time, err error) {
			start := now.Truncate(time.Millisecond)
			if len(parts) > 0 {
				if end := idTime(parts[len(parts)-1].ToID.Bytes); end.After(start) {
					start = end
				}
			}
			if !start.Before(horizon) {
				return time.Time{}, time.Time{}, nil
			}
			return start, start.Add(period), nil
		})
		if err != nil {
			if partitionRace(err) {
				return nil
			}
			return err
		}
		if !made {
			return nil
		}
	}
	return nil
}

// partitionRace reports whether making a range failed for a reason the
// next attempt may not meet: a lock that was not free in time, or a range
// that another process made first (the same, or one that overlaps). Two
// transactions that create the same table at once do not always meet at
// its name (42P07): the one that waited on the other's catalog rows may
// hear of its row type instead (42710, "type … already exists") or of the
// catalog's unique index (23505).
func partitionRace(err error) bool {
	var pgErr *pgconn.PgError
	if isLockTimeout(err) {
		return true
	}
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "42P07", "42710", "42P17", "23505":
		return true
	}
	return false
}

// lockRanges serializes the changes of ranges in a schema: a transaction
// that makes a range, or drops one, takes it first, and lists the ranges
// after (ListPartitions reads without waiting). Creations whose runs no
// range holds, made at once, then make one range between them, not one
// each that ends where another's begins; and a drop never holds a history
// table's lock while it waits for this one, which a transaction that
// makes a range holds while it attaches. SHARE ROW EXCLUSIVE conflicts
// with itself and with writes of dagen_partitions, not with reads, nor
// with the row locks a retry takes (FencePartition).
const lockRanges = "LOCK TABLE dagen_partitions IN SHARE ROW EXCLUSIVE MODE"

// makeRange makes the range that pick chooses from the ranges as they
// stand once it holds lockRanges, and reports whether pick chose one (a
// zero from: none to make). The three partitions of [from, to) and the
// range's row are made in that one transaction. Each partition is created
// as a table and then attached, which takes SHARE UPDATE EXCLUSIVE on its
// parent: the engine's queries, which take weaker locks, go on meanwhile.
// (CREATE TABLE … PARTITION OF would take ACCESS EXCLUSIVE, which waits
// for every transaction in flight and holds every new one back.)
func (pt *Partitions) makeRange(ctx context.Context, pick func([]dbsqlc.DagenPartition) (from, to time.Time, err error)) (bool, error) {
	var from, to time.Time
	err := pgx.BeginFunc(ctx, pt.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+attachLockTimeout+"'"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, lockRanges); err != nil {
			return fmt.Errorf("lock the ranges: %w", err)
		}
		parts, err := pt.q.ListPartitions(ctx, tx)
		if err != nil {
			return fmt.Errorf("list partitions: %w", err)
		}
		if from, to, err = pick(parts); err != nil || from.IsZero() {
			return err
		}
		suffix := fmt.Sprintf("p%s_%03d", from.UTC().Format("20060102t150405"), from.UnixMilli()%1000)
		lo, hi := uuidAt(from), uuidAt(to)
		for _, t := range historyTables {
			if _, err := tx.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING ALL)%s", partitionIdent(t.name, suffix), t.name, t.with)); err != nil {
				return err
			}
			if err := attachPartition(ctx, tx, t.name, suffix, lo, hi); err != nil {
				return err
			}
		}
		return pt.q.InsertPartition(ctx, tx, dbsqlc.InsertPartitionParams{Suffix: suffix, FromID: uuidOf(lo), ToID: uuidOf(hi)})
	})
	switch {
	case err != nil && !from.IsZero():
		return false, fmt.Errorf("make a range for runs made from %s to %s: %w", from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), err)
	case err != nil:
		return false, err
	}
	return !from.IsZero(), nil
}

// isNoPartition reports whether err is Postgres's refusal of a row whose
// run id no range holds.
func isNoPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.HasPrefix(pgErr.Message, "no partition of relation")
}

// WithRanges calls create, which writes runs, and when Postgres refused
// it because no range holds a run's id, makes the ranges (coverRuns) and
// calls it again.
func (pt *Partitions) WithRanges(ctx context.Context, runs []store.NewRun, create func() error) error {
	err := create()
	if !isNoPartition(err) {
		return err
	}
	if err := pt.coverRuns(ctx, runs); err != nil {
		return fmt.Errorf("create %d runs: %w", len(runs), err)
	}
	return create()
}

// coverRuns makes ranges for the ids of runs that no range holds (a
// creation that Postgres refused for them tries again after): a range
// from the start of the id's period (time.Truncate), or from the end of
// the range before it when that is less than a period back, a period wide
// or up to the next range. Creations at once whose ids fall in one period
// make one range, whichever comes first.
// A range being dropped holds ids no run may take any more: a run made
// with one (by a clock behind by more than the retention) is refused.
func (pt *Partitions) coverRuns(ctx context.Context, runs []store.NewRun) error {
	for attempt := 0; ; attempt++ {
		made, err := pt.makeRange(ctx, func(parts []dbsqlc.DagenPartition) (from, to time.Time, err error) {
			id, ok := uncovered(parts, runs)
			if !ok {
				return time.Time{}, time.Time{}, nil
			}
			from, to = coverRange(parts, id, pt.coverPeriod(parts))
			if from.IsZero() {
				return from, to, fmt.Errorf("run %s: its range of ids is being pruned (its id was made %s, before the retention)", id, idTime(id).UTC().Format(time.RFC3339Nano))
			}
			return from, to, nil
		})
		switch {
		case err != nil && (!partitionRace(err) || attempt >= 5):
			return err
		case err == nil && !made:
			return nil
		}
	}
}

// coverPeriod is the width of a range made for a creation: the configured
// period, or the one this process's leader chose last, or the width of the
// newest range (made by a leader elsewhere), or, before any, the least.
func (pt *Partitions) coverPeriod(parts []dbsqlc.DagenPartition) time.Duration {
	if pt.period > 0 {
		return pt.period
	}
	if p := time.Duration(pt.lastPeriod.Load()); p > 0 {
		return p
	}
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i].FromID.Bytes != [16]byte{} { // not the migration's first range
			w := idTime(parts[i].ToID.Bytes).Sub(idTime(parts[i].FromID.Bytes))
			return min(max(w, MinPartitionPeriod), MaxPartitionPeriod)
		}
	}
	return MinPartitionPeriod
}

// uncovered returns the first id of runs that no range holds, or that a
// range being dropped holds.
func uncovered(parts []dbsqlc.DagenPartition, runs []store.NewRun) (dag.RunID, bool) {
	for i := range runs {
		if p := rangeOf(parts, runs[i].ID); p == nil || p.Dropping {
			return runs[i].ID, true
		}
	}
	return dag.RunID{}, false
}

// rangeOf returns the range of parts that holds id, or nil.
func rangeOf(parts []dbsqlc.DagenPartition, id dag.RunID) *dbsqlc.DagenPartition {
	for i := range parts {
		if !uuidLess(id, parts[i].FromID.Bytes) && uuidLess(id, parts[i].ToID.Bytes) {
			return &parts[i]
		}
	}
	return nil
}

// coverRange returns the range to make for id, which no live range holds;
// zero times when a range being dropped holds it.
func coverRange(parts []dbsqlc.DagenPartition, id dag.RunID, period time.Duration) (from, to time.Time) {
	if rangeOf(parts, id) != nil {
		return time.Time{}, time.Time{} // a range being dropped
	}
	at := idTime(id)
	from = at.Truncate(period)
	for _, p := range parts {
		pTo := idTime(p.ToID.Bytes)
		if !pTo.After(at) && (pTo.After(from) || at.Sub(pTo) < period) {
			from = pTo // close the gap behind it, or start past the range that ends in this period
		}
	}
	to = from.Add(period)
	for _, p := range parts {
		if pFrom := idTime(p.FromID.Bytes); pFrom.After(at) && pFrom.Before(to) {
			to = pFrom
		}
	}
	return from, to
}

// dropPartition drops the range p when every run in it finished before
// cutoff with no task left that can change, and returns how many runs it
// had; it leaves a range with a live run alone (0, nil).
//
// No run is lost. First, in one transaction, the range's row is locked:
// retry, the one way to reopen a finished run, takes it FOR SHARE before
// anything else (FencePartition), so no run of the range is reopened from
// the check on; its runs are checked, and the range is marked dropping,
// which retries then refuse. Then its three partitions are detached
// CONCURRENTLY, which waits for the transactions that could still write
// them. Last, a detached range is checked again for runs made in it since
// the first check, by a clock behind by more than partitionGrace: with
// one, the range is attached again; without, its tables and its row go.
// A leader that stops half way leaves the range marked, and the next
// round takes it up where it was.
func (pt *Partitions) dropPartition(ctx context.Context, p dbsqlc.DagenPartition, cutoff time.Time) (int, error) {
	at := pgtype.Timestamptz{Time: cutoff, Valid: true}
	if since := uuidAt(cutoff); !p.Dropping && uuidLess(since, p.ToID.Bytes) {
		// A run made at the cutoff or later keeps the range: one lookup,
		// where counting the range's runs took long at every round, for
		// each range that ended but was not yet a retention old (see
		// docs/performance.md, "Dropping a range: one lookup for late
		// runs"). (Ids come from the workers' clocks: one a little ahead
		// keeps a range a round longer, never drops one early.)
		found, err := pt.q.RangeHasRunsSince(ctx, pt.pool, uuidOf(since), p.ToID)
		if err != nil {
			return 0, fmt.Errorf("drop partition %s: look for runs made after the cutoff: %w", p.Suffix, err)
		}
		if found {
			return 0, nil
		}
	}
	if !p.Dropping {
		err := pgx.BeginFunc(ctx, pt.pool, func(tx pgx.Tx) error {
			if _, err := pt.q.LockPartition(ctx, tx, p.Suffix); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return errNothingToDo // another leader dropped it
				}
				return err
			}
			count, err := pt.q.PartitionRuns(ctx, tx, dbsqlc.PartitionRunsParams{FromID: p.FromID, ToID: p.ToID, Cutoff: at})
			if err != nil {
				return fmt.Errorf("check its runs: %w", err)
			}
			if count.Live > 0 {
				return errNothingToDo
			}
			if err := pt.q.DeleteRangeLeftovers(ctx, tx, p.FromID, p.ToID); err != nil {
				return fmt.Errorf("delete keys: %w", err)
			}
			return pt.q.SetPartitionDropping(ctx, tx, true, p.Suffix)
		})
		switch {
		case errors.Is(err, errNothingToDo), isLockTimeout(err):
			return 0, nil
		case err != nil:
			return 0, fmt.Errorf("drop partition %s: %w", p.Suffix, err)
		}
	}
	for _, t := range historyTables {
		if err := pt.detach(ctx, t.name, p.Suffix); err != nil {
			if isLockTimeout(err) {
				return 0, nil // the next round finishes it
			}
			return 0, fmt.Errorf("drop partition %s: %w", p.Suffix, err)
		}
	}
	var runs int
	err := pgx.BeginFunc(ctx, pt.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+attachLockTimeout+"'"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, lockRanges); err != nil {
			return err
		}
		if _, err := pt.q.LockPartition(ctx, tx, p.Suffix); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return errNothingToDo
			}
			return err
		}
		var late int
		err := tx.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE created_at >= $1 OR finished_at IS NULL OR status IN ('QUEUED', 'RUNNING')) FROM "+
			partitionIdent("dagen_runs", p.Suffix), at).Scan(&runs, &late)
		if err != nil {
			return fmt.Errorf("check for late runs: %w", err)
		}
		if late > 0 {
			// Back: the run stays, and the range with it.
			runs = 0
			for _, t := range historyTables {
				if err := attachPartition(ctx, tx, t.name, p.Suffix, p.FromID.Bytes, p.ToID.Bytes); err != nil {
					return fmt.Errorf("attach it again for a late run: %w", err)
				}
			}
			return pt.q.SetPartitionDropping(ctx, tx, false, p.Suffix)
		}
		for _, t := range historyTables {
			if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+partitionIdent(t.name, p.Suffix)); err != nil {
				return err
			}
		}
		return pt.q.DeletePartition(ctx, tx, p.Suffix)
	})
	switch {
	case errors.Is(err, errNothingToDo), isLockTimeout(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("drop partition %s: %w", p.Suffix, err)
	}
	return runs, nil
}

// partitionIdent is the quoted name of table's partition for the range
// suffix: table_suffix.
func partitionIdent(table, suffix string) string {
	return pgx.Identifier{table + "_" + suffix}.Sanitize()
}

// attachPartition attaches table's partition of the range suffix, [lo, hi).
func attachPartition(ctx context.Context, tx pgx.Tx, table, suffix string, lo, hi [16]byte) error {
	_, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')",
		table, partitionIdent(table, suffix), dag.RunID(lo), dag.RunID(hi)))
	return err
}

// detach detaches parent's partition of the range suffix CONCURRENTLY, or
// finishes a detach that was interrupted; a table already detached (or
// gone) is left as it is. DETACH … CONCURRENTLY cannot run in a
// transaction: it runs alone on a connection of its own, whose lock
// timeout bounds its waits.
func (pt *Partitions) detach(ctx context.Context, parent, suffix string) error {
	part := partitionIdent(parent, suffix)
	conn, err := pt.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var pending bool
	err = conn.QueryRow(ctx, "SELECT i.inhdetachpending FROM pg_inherits i WHERE i.inhrelid = to_regclass($1) AND i.inhparent = to_regclass($2)",
		part, parent).Scan(&pending)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", part, err)
	}
	mode := "CONCURRENTLY"
	if pending {
		mode = "FINALIZE"
	}
	if _, err := conn.Exec(ctx, "SET lock_timeout = '"+detachTimeout+"'"); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DETACH PARTITION %s %s", parent, part, mode))
	if _, rerr := conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout"); rerr != nil {
		conn.Conn().Close(context.WithoutCancel(ctx)) // not back to the pool with the timeout set
	}
	if err != nil {
		return fmt.Errorf("detach %s: %w", part, err)
	}
	return nil
}

// errNothingToDo makes a transaction of a drop roll back: the range stays,
// or another leader dropped it.
var errNothingToDo = errors.New("nothing to do")

// uuidOf is id as a uuid parameter.
func uuidOf(id dag.RunID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: true} }

// isLockTimeout reports whether err is Postgres's lock_not_available: a
// lock that was not free at once (NOWAIT) or within the lock timeout.
func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// uuidAt returns the lowest UUIDv7 of t's millisecond: the ids made at t
// or later are not below it.
func uuidAt(t time.Time) [16]byte {
	var id [16]byte
	ms := uint64(max(t.UnixMilli(), 0))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ms)
	copy(id[:6], b[2:])
	return id
}

// idTime returns the millisecond a UUIDv7 was made.
func idTime(id [16]byte) time.Time {
	var b [8]byte
	copy(b[2:], id[:6])
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b[:])))
}

// uuidLess reports whether a sorts before b, as Postgres sorts uuids.
func uuidLess(a, b [16]byte) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
