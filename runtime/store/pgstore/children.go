package pgstore

import (
	"context"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// ListChildren implements store.Operator.
func (s *Store) ListChildren(ctx context.Context, id dag.RunID) ([]store.ChildRun, error) {
	return nil, nil // TODO
}
