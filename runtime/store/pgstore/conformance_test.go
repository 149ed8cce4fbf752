package pgstore_test

import (
	"context"
	"testing"
	"time"

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

// newStore returns a store over a fresh, migrated schema. now may be nil
// (the database clock).
func newStore(t testing.TB, now func() time.Time, maxConns int32) *pgstore.Store {
	t.Helper()
	pool := pgtest.NewPool(t, maxConns)
	if err := pgstore.Migrate(context.Background(), pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	s, err := pgstore.New(context.Background(), pool, &pgstore.Config{Now: now})
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	return s
}
