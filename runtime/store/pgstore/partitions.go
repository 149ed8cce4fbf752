package pgstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// The history tables (dagen_runs, dagen_tasks, dagen_events) are
// partitioned by ranges of run id, which are ranges of time: a UUIDv7
// begins with the millisecond it was made (migration 009 says more). The
// leader's PruneRuns keeps ranges made ahead and drops old ones whole.
const (
	// MinPartitionPeriod and MaxPartitionPeriod bound the width of a new
	// range when it is chosen from the retention ([Config.PartitionPeriod]).
	MinPartitionPeriod = time.Minute
	MaxPartitionPeriod = 7 * 24 * time.Hour

	// partitionsAhead is how many periods past now the ranges reach: a
	// leader that misses a few rounds of pruning leaves no id without one.
	partitionsAhead = 3
	// partitionGrace is how long after a range ends it is kept at least:
	// ids are made by the workers' clocks, which may be a little behind.
	// (A late id in a dropped range goes to the default partition, and a
	// drop checks for late runs under its locks.)
	partitionGrace = 10 * time.Second
	// partitionLead is how far ahead of now a range starts when none holds
	// the present (a new schema, or a leader back after a long stop):
	// ids of the present go to the default partition meanwhile, and a
	// range over them would be refused.
	partitionLead = time.Second
	// partitionLockTimeout bounds each wait for a table lock of the DDL:
	// a drop or a creation that cannot have its locks at once gives up
	// (and is tried again at the next round) rather than queue the
	// engine's transactions behind it.
	partitionLockTimeout = "200ms"
	// maxNewPartitions bounds the ranges made in one round.
	maxNewPartitions = 16
)

// historyTables are the partitioned tables, in the order their partitions
// are made and dropped, with each new partition's storage settings (those
// of migration 001).
var historyTables = []struct{ name, with string }{
	{"dagen_runs", " WITH (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 80)"},
	{"dagen_tasks", " WITH (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 50)"},
	{"dagen_events", ""},
}

// partitionPeriod is the width of new ranges: the configured one, or half
// the retention, between MinPartitionPeriod and MaxPartitionPeriod. A run
// is then kept for its retention and at most one period and a round more.
func (s *Store) partitionPeriod(now, cutoff time.Time) time.Duration {
	if s.period > 0 {
		return s.period
	}
	return min(max(now.Sub(cutoff)/2, MinPartitionPeriod), MaxPartitionPeriod)
}

// partitioning reports whether the leader makes and drops ranges. It is
// off unless Config.PartitionPeriod is set (see its doc): every run then
// goes to the default partition, pruned by DELETE, as before version 9.
func (s *Store) partitioning() bool { return s.period != 0 }

// idClock is the time of run ids: the store's clock when it has one (tests),
// else this process's, which makes the ids.
func (s *Store) idClock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// maintainPartitions makes the ranges up to partitionsAhead periods past
// now, then drops every range that ended partitionGrace ago and whose runs
// all finished before cutoff. It returns how many runs it dropped.
func (s *Store) maintainPartitions(ctx context.Context, cutoff time.Time) (int, error) {
	if !s.partitioning() {
		return 0, nil
	}
	parts, err := s.q.ListPartitions(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("list partitions: %w", err)
	}
	now := s.idClock()
	if err := s.makePartitions(ctx, parts, now, s.partitionPeriod(now, cutoff)); err != nil {
		return 0, err
	}
	end := uuidAt(now.Add(-partitionGrace))
	dropped := 0
	for _, p := range parts {
		if !uuidLess(p.ToID.Bytes, end) {
			break // ranges are in order: the rest end later
		}
		n, err := s.dropPartition(ctx, p, cutoff)
		if err != nil {
			return dropped, err
		}
		dropped += n
	}
	return dropped, nil
}

// makePartitions adds ranges of period after the last one until they
// reach partitionsAhead periods past now. A new range starts where the
// last ends; when that is past (a new schema, or a leader back after a
// long stop), partitionLead ahead of now, leaving the gap to the default
// partition; and past any id of the default partition that it would hold
// (Postgres would refuse it). A lock that is not free at once ends the
// round early.
func (s *Store) makePartitions(ctx context.Context, parts []dbsqlc.DagenPartition, now time.Time, period time.Duration) error {
	start := now.Add(partitionLead)
	if len(parts) > 0 {
		if end := idTime(parts[len(parts)-1].ToID.Bytes); end.After(now) {
			start = end
		}
	}
	horizon := now.Add(partitionsAhead * period)
	for made := 0; made < maxNewPartitions && start.Before(horizon); {
		end := start.Add(period)
		var stray pgtype.UUID
		err := s.pool.QueryRow(ctx, "SELECT id FROM dagen_runs_default WHERE id >= $1 AND id < $2 ORDER BY id DESC LIMIT 1",
			uuidOf(uuidAt(start)), uuidOf(uuidAt(end))).Scan(&stray)
		switch {
		case err == nil:
			start = idTime(stray.Bytes).Add(time.Millisecond)
			continue
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read the default partition: %w", err)
		}
		if err := s.makePartition(ctx, start, end); err != nil {
			var pgErr *pgconn.PgError
			if isLockTimeout(err) || errors.As(err, &pgErr) && (pgErr.Code == "23514" || pgErr.Code == "42P07" || pgErr.Code == "23505") {
				// Busy, an id came into the default partition since, or
				// a leader that just lost its lead made it first: the
				// next round looks again.
				return nil
			}
			return err
		}
		start = end
		made++
	}
	return nil
}

// makePartition makes the three partitions of [from, to) and its row in
// one transaction.
func (s *Store) makePartition(ctx context.Context, from, to time.Time) error {
	suffix := fmt.Sprintf("p%s_%03d", from.UTC().Format("20060102t150405"), from.UnixMilli()%1000)
	lo, hi := uuidAt(from), uuidAt(to)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+partitionLockTimeout+"'"); err != nil {
			return err
		}
		for _, t := range historyTables {
			sql := fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')%s",
				pgx.Identifier{t.name + "_" + suffix}.Sanitize(), t.name, dag.RunID(lo), dag.RunID(hi), t.with)
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		return s.q.InsertPartition(ctx, tx, dbsqlc.InsertPartitionParams{Suffix: suffix, FromID: uuidOf(lo), ToID: uuidOf(hi)})
	})
	if err != nil {
		return fmt.Errorf("make partition %s for runs made from %s to %s: %w", suffix, from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), err)
	}
	return nil
}

// dropPartition drops the range p when every run in it finished before
// cutoff with no task left that can change, and returns how many runs it
// had; it leaves a range with a live run alone (0, nil).
//
// No run is lost. The range's row is locked first: retry, the one way to
// reopen a finished run, takes it FOR SHARE before anything else
// (FencePartition), so no run of the range is reopened from the check
// on. A new run with an id in the range (made by a clock behind by more
// than partitionGrace) was created after cutoff: once the tables are
// locked, which waits for the transactions writing them, an index probe
// finds it, and the range stays. The drop is one transaction: a range's
// three partitions and its row go together or not at all.
func (s *Store) dropPartition(ctx context.Context, p dbsqlc.DagenPartition, cutoff time.Time) (int, error) {
	var runs int
	at := pgtype.Timestamptz{Time: cutoff, Valid: true}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+partitionLockTimeout+"'"); err != nil {
			return err
		}
		if _, err := s.q.LockPartition(ctx, tx, p.Suffix); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return errNothingToDo // another leader dropped it
			}
			return err
		}
		count, err := s.q.PartitionRuns(ctx, tx, dbsqlc.PartitionRunsParams{FromID: p.FromID, ToID: p.ToID, Cutoff: at})
		if err != nil {
			return fmt.Errorf("check its runs: %w", err)
		}
		if count.Live > 0 {
			return errNothingToDo
		}
		runs = int(count.Runs)
		if err := s.q.DeleteRangeLeftovers(ctx, tx, p.FromID, p.ToID); err != nil {
			return fmt.Errorf("delete keys: %w", err)
		}
		// The parents first, as every query locks them, then the
		// partitions: a lock taken in the other order could deadlock.
		if _, err := tx.Exec(ctx, "LOCK TABLE ONLY dagen_runs, dagen_tasks, dagen_events IN ACCESS EXCLUSIVE MODE"); err != nil {
			return fmt.Errorf("lock the history tables: %w", err)
		}
		var late bool
		runsPart := pgx.Identifier{"dagen_runs_" + p.Suffix}.Sanitize()
		err = tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+runsPart+" WHERE created_at >= $1)", at).Scan(&late)
		if err != nil {
			return fmt.Errorf("check for late runs: %w", err)
		}
		if late {
			return errNothingToDo
		}
		for i := len(historyTables) - 1; i >= 0; i-- {
			if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{historyTables[i].name + "_" + p.Suffix}.Sanitize()); err != nil {
				return err
			}
		}
		return s.q.DeletePartition(ctx, tx, p.Suffix)
	})
	switch {
	case errors.Is(err, errNothingToDo), isLockTimeout(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("drop partition %s: %w", p.Suffix, err)
	}
	return runs, nil
}

// isLockTimeout reports whether err is Postgres's lock_not_available: a
// lock the DDL did not have within partitionLockTimeout.
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
