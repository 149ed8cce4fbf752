// Package storetest is the conformance suite every [store.Store] must pass.
// memstore and pgstore both run it, so the in-memory store is proven to be a
// second implementation of the same contract, not a fake that agrees with
// itself.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
//			return memstore.New(&memstore.Config{Now: now})
//		})
//	}
package storetest
