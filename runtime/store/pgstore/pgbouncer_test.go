package pgstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
	"github.com/dagenhq/dagen/runtime/store/storetest"
)

// TestConformanceThroughPgBouncer runs the store contract through a real
// PgBouncer in transaction mode: every transaction may land on another
// server connection, so nothing may rely on a session (named prepared
// statements, session locks). LISTEN goes to the session URL, a direct
// one.
func TestConformanceThroughPgBouncer(t *testing.T) {
	bouncer := pgtest.StartPgBouncer(t, pgtest.PgBouncerOptions{DefaultPoolSize: 4})
	databases := pgtest.NewDatabases(t, pgstore.Migrate)
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		db := databases.Get(t)
		cfg := &pgstore.Config{Now: now, SessionURL: pgtest.DatabaseURL(t, db)}
		s, err := pgstore.OpenConfig(context.Background(), bouncer.URL(db), cfg)
		require.NoError(t, err)
		t.Cleanup(s.Close)
		return rollingBack{s}
	})
}

// TestSessionOnlyWhereItLasts: through PgBouncer in transaction mode
// without a session URL, the store does not LISTEN (the session would not
// last) and says what to do; over a direct connection, by TCP or by the
// server's Unix socket, it listens on its pool.
func TestSessionOnlyWhereItLasts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bouncer := pgtest.StartPgBouncer(t, pgtest.PgBouncerOptions{DefaultPoolSize: 2})
	db := pgtest.Database(t)
	pooled, err := pgstore.Open(ctx, bouncer.URL(db))
	require.NoError(t, err)
	t.Cleanup(pooled.Close)
	_, err = pooled.Subscribe(ctx)
	require.ErrorIs(t, err, pgstore.ErrNoSession)
	_, err = pooled.SubscribeCancels(ctx)
	require.ErrorIs(t, err, pgstore.ErrNoSession)
	require.Equal(t, pgx.QueryExecModeCacheDescribe, pooled.Pool().Config().ConnConfig.DefaultQueryExecMode,
		"no named statements through a transaction pooler")

	urls := map[string]string{"tcp": pgtest.DatabaseURL(t, db)}
	if _, err := os.Stat("/var/run/postgresql/.s.PGSQL.5432"); err == nil {
		urls["socket"] = "host=/var/run/postgresql dbname=" + db + " user=postgres"
	}
	for name, url := range urls {
		direct, err := pgstore.Open(ctx, url)
		require.NoError(t, err, name)
		t.Cleanup(direct.Close)
		_, err = direct.Subscribe(ctx)
		require.NoError(t, err, name)
		require.Equal(t, pgx.QueryExecModeCacheStatement, direct.Pool().Config().ConnConfig.DefaultQueryExecMode, name)
	}

	// A session URL to another database is refused at once.
	_, err = pgstore.OpenConfig(ctx, bouncer.URL(db), &pgstore.Config{SessionURL: pgtest.URL()})
	require.ErrorContains(t, err, "give both the same database and search_path")
}
