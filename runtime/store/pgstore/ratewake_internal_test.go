package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// TestAdmissionTakesWakeRowsInKeyOrder: an admission's last statements
// (LockRateWakes, then SetRateWakes) take its buckets' wake rows in key
// order, as an enqueue that parks tasks at buckets the admission holds
// does, so that neither holds a row the other waits for while it waits.
// Here the enqueue holds a's row and then wants b's, while the admission
// moves a's (the enqueue touched it) and b's (tasks still wait there).
// SetRateWakes alone took b's row first (its INSERT runs before its
// CTEs) and then waited for a's: the two deadlocked.
func TestAdmissionTakesWakeRowsInKeyOrder(t *testing.T) {
	ctx := context.Background()
	s, pool := wakeStore(t, 4)
	now := time.Now()
	_, err := pool.Exec(ctx, `INSERT INTO dagen_rate_wakes (rate_limit, rate_key, wake_at) VALUES ('l', 'a', $1), ('l', 'b', $1)`, now)
	require.NoError(t, err)

	enqueue, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = enqueue.Rollback(ctx) }()
	_, err = enqueue.Exec(ctx, `UPDATE dagen_rate_wakes SET touched = touched + 1 WHERE rate_limit = 'l' AND rate_key = 'a'`)
	require.NoError(t, err)

	admitted := make(chan error, 1)
	go func() {
		admitted <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			w := dbsqlc.SetRateWakesParams{
				Limits: []string{"l", "l"}, Keys: []string{"a", "b"},
				Wakes:   []pgtype.Timestamptz{{}, tstz(now.Add(time.Second))},
				Touched: []int64{0, 0}, Now: tstz(now),
			}
			return s.setRateWakes(ctx, tx, w)
		})
	}()
	require.Eventually(t, func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '-- name: %RateWakes%'`).Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 5*time.Millisecond, "the admission waits for a's row")

	_, err = enqueue.Exec(ctx, `UPDATE dagen_rate_wakes SET touched = touched + 1 WHERE rate_limit = 'l' AND rate_key = 'b'`)
	require.NoError(t, err, "the enqueue takes b's row: the admission holds none while it waits")
	require.NoError(t, enqueue.Commit(ctx))
	require.NoError(t, <-admitted)

	var wakes int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM dagen_rate_wakes WHERE wake_at = $1`, now.Add(time.Second)).Scan(&wakes))
	require.Equal(t, 1, wakes, "b's next look")
}

// TestAdmissionKeepsATouchedLook: an admission that saw nothing waiting
// drops its bucket's wake row only if no enqueue touched the row since
// the admission took its look; a touched row is made due at once, since
// the enqueue parked a task the admission may not have read. Without the
// check the parked task waits until another task of its key comes.
func TestAdmissionKeepsATouchedLook(t *testing.T) {
	ctx := context.Background()
	s, pool := wakeStore(t, 2)
	now := time.Now().Truncate(time.Microsecond)
	look := now.Add(rateWakeLease)
	// The admission took both looks when each row had touched = 0; an
	// enqueue touched a's row since.
	_, err := pool.Exec(ctx, `INSERT INTO dagen_rate_wakes (rate_limit, rate_key, wake_at, touched) VALUES ('l', 'a', $1, 1), ('l', 'b', $1, 0)`, look)
	require.NoError(t, err)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return s.setRateWakes(ctx, tx, dbsqlc.SetRateWakesParams{
			Limits: []string{"l", "l"}, Keys: []string{"a", "b"},
			Wakes:   []pgtype.Timestamptz{{}, {}},
			Touched: []int64{0, 0}, Now: tstz(now),
		})
	})
	require.NoError(t, err)
	rows, err := pool.Query(ctx, `SELECT rate_key, wake_at FROM dagen_rate_wakes ORDER BY rate_key`)
	require.NoError(t, err)
	type wake struct {
		Key string
		At  time.Time
	}
	wakes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[wake])
	require.NoError(t, err)
	require.Len(t, wakes, 1, "b's row goes: nothing came since its look")
	require.Equal(t, "a", wakes[0].Key, "a's row stays: an enqueue parked a task since its look")
	require.True(t, wakes[0].At.Equal(now), "a is due again at once, not when the look ends: %s", wakes[0].At)
}

// wakeStore returns a store on a migrated schema of its own, with a pool
// of conns connections.
func wakeStore(t *testing.T, conns int32) (*Store, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewPool(t, conns)
	require.NoError(t, Migrate(context.Background(), pool))
	s, err := New(context.Background(), pool, nil)
	require.NoError(t, err)
	return s, pool
}
