package pgstore

import (
	"context"
	"fmt"
)

// QueueHead counts the places the fair queue hands out in its next round:
// the entries of the first block of the ready queue, one for each tenant
// with queued work (w for a tenant of weight w). A sharded store
// (shardstore) splits a claim between its shards by it, so that the
// tenants of every shard get their turn as they would in one queue. Zero
// means the ready queue is empty.
func (s *Store) QueueHead(ctx context.Context) (int, error) {
	n, err := s.q.QueueHead(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("pgstore: count the head of the ready queue: %w", err)
	}
	return int(n), nil
}
