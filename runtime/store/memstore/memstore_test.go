package memstore_test

import (
	"testing"
	"time"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/memstore"
	"github.com/dagenhq/dagen/runtime/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		return memstore.New(&memstore.Config{Now: now})
	})
}
