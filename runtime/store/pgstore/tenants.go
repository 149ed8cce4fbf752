package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// Operators move a logical shard of a sharded store (shardstore) from one
// database to another with these: which tenants a schema keeps state of,
// whether their runs have drained, and their idempotency keys, which must
// follow them so that a key taken before the move is still taken after.

// KnownTenants returns, sorted, every tenant the schema keeps something of
// apart from finished history: a place in the fair queue (and its weight),
// an idempotency key, a schedule or an unfinished run.
func (s *Store) KnownTenants(ctx context.Context) ([]string, error) {
	ts, err := s.q.KnownTenants(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list tenants: %w", err)
	}
	return ts, nil
}

// UnfinishedRuns counts the QUEUED and RUNNING runs of tenants.
func (s *Store) UnfinishedRuns(ctx context.Context, tenants []string) (int, error) {
	n, err := s.q.CountUnfinishedRuns(ctx, s.pool, tenants)
	if err != nil {
		return 0, fmt.Errorf("pgstore: count unfinished runs of %d tenants: %w", len(tenants), err)
	}
	return int(n), nil
}

// CopyKeys writes the idempotency keys of tenants into dst, keeping the
// keys dst has already, and returns how many it wrote. A key keeps naming
// its run where the run is; dst deletes it with the range of run ids it
// falls in (PruneRuns), as it deletes its own.
func (s *Store) CopyKeys(ctx context.Context, dst *Store, tenants []string) (int, error) {
	keys, err := s.q.TenantKeys(ctx, s.pool, tenants)
	if err != nil {
		return 0, fmt.Errorf("pgstore: read the keys of %d tenants: %w", len(tenants), err)
	}
	var p dbsqlc.PutKeysParams
	for _, k := range keys {
		p.Workflows = append(p.Workflows, k.Workflow)
		p.Tenants = append(p.Tenants, k.Tenant)
		p.Keys = append(p.Keys, k.Key)
		p.RunIds = append(p.RunIds, pgtype.UUID{Bytes: k.RunID.Bytes, Valid: true})
	}
	if len(keys) == 0 {
		return 0, nil
	}
	n, err := dst.q.PutKeys(ctx, dst.pool, p)
	if err != nil {
		return 0, fmt.Errorf("pgstore: write %d keys: %w", len(keys), err)
	}
	return int(n), nil
}
