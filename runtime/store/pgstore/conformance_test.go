package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
	"github.com/dagenhq/dagen/runtime/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		return rollingBack{newStore(t, now, 8)}
	})
}

// newStore returns a store over a migrated schema of its own (borrowed
// from schemas). now may be nil (the database clock).
func newStore(t testing.TB, now func() time.Time, maxConns int32) *pgstore.Store {
	t.Helper()
	return storeOn(t, pgtest.Pool(t, schemas.Get(t), maxConns), now)
}

// freshStore is newStore on a schema made and migrated for the test, for
// the tests of what the server's statistics say: in a borrowed schema, its
// tables' counters (last vacuum, analyze, rows) are those of the tests
// before.
func freshStore(t testing.TB, now func() time.Time, maxConns int32) *pgstore.Store {
	t.Helper()
	pool := pgtest.NewPool(t, maxConns)
	if err := pgstore.Migrate(context.Background(), pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return storeOn(t, pool, now)
}

func storeOn(t testing.TB, pool *pgxpool.Pool, now func() time.Time) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(context.Background(), pool, &pgstore.Config{Now: now})
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	return s
}
