package engine

import (
	"fmt"

	"github.com/dagenhq/dagen/runtime/store"
)

// flowOf sets a new run's concurrency cap and timeout from its definition
// and its trigger: the cap's key is derived from the encoded input, and a
// trigger's own timeout (WithTimeout) wins over the definition's.
func flowOf(nr *store.NewRun, def *Definition, req TriggerRequest) error {
	if req.Timeout < 0 {
		return fmt.Errorf("negative timeout %s: want a duration above zero, or 0 for the workflow's", store.ShortDuration(req.Timeout))
	}
	nr.Timeout = def.Timeout
	if req.Timeout > 0 {
		nr.Timeout = req.Timeout
	}
	if def.Concurrency <= 0 {
		return nil
	}
	nr.Concurrency = def.Concurrency
	if def.ConcurrencyKey == nil {
		return nil
	}
	key, err := def.ConcurrencyKey(nr.Input)
	if err != nil {
		return fmt.Errorf("derive the concurrency key: %w", err)
	}
	if err := store.ValidKey(key); err != nil {
		return fmt.Errorf("concurrency key: %w", err)
	}
	nr.ConcurrencyKey = key
	return nil
}
