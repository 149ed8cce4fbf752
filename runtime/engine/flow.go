package engine

import (
	"fmt"
	"slices"

	"github.com/dagenhq/dagen/runtime/store"
)

// flowOf sets a new run's concurrency cap and timeout from its definition
// and its trigger: the cap's key is derived from the encoded input, and a
// trigger's own timeout (WithTimeout) wins over the definition's.
func flowOf(nr *store.NewRun, def *Definition, req TriggerRequest) error {
	if req.Timeout < 0 {
		return fmt.Errorf("negative timeout %s: want a duration above zero, or 0 for the workflow's", store.ShortDuration(req.Timeout))
	}
	if req.Priority < 0 || req.Priority > MaxPriority {
		return fmt.Errorf("priority %d: %w", req.Priority, ErrInvalidPriority)
	}
	nr.Priority = def.Priority
	if req.Priority > 0 {
		nr.Priority = req.Priority
	}
	if err := rateKeysOf(nr, def); err != nil {
		return err
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

// ErrInvalidPriority is wrapped by the error of a trigger whose priority
// is out of range.
var ErrInvalidPriority = fmt.Errorf("a run's priority is 0 (the default) to %d, higher first", MaxPriority)

// rateKeysOf gives the rate-limited tasks of nr their buckets' keys,
// derived from the run's input (per= on the step). The definition's
// tasks are shared by its runs: a run with keys gets a copy.
func rateKeysOf(nr *store.NewRun, def *Definition) error {
	copied := false
	for _, st := range def.Steps {
		rl := st.RateLimit
		if rl == nil || rl.Key == nil {
			continue
		}
		key, err := rl.Key(nr.Input)
		if err != nil {
			return fmt.Errorf("derive the key of rate limit %s for step %s: %w", rl.Name, st.Name, err)
		}
		if err := store.ValidKey(key); err != nil {
			return fmt.Errorf("key of rate limit %s for step %s: %w", rl.Name, st.Name, err)
		}
		if !copied {
			nr.Tasks = slices.Clone(nr.Tasks)
			copied = true
		}
		for i := range nr.Tasks {
			if nr.Tasks[i].Name == st.Name {
				nr.Tasks[i].RateKey = key
			}
		}
	}
	return nil
}
