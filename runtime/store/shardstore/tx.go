package shardstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// ErrWrongShard is wrapped by the error of a trigger in a caller's
// transaction (TxTriggers) that is not on the database of the shard the
// runs belong to: a transaction is on one database, and a run must be
// written where its tenant's runs are. Open the transaction on
// ShardFor(tenant)'s pool, one transaction a shard.
var ErrWrongShard = errors.New("the transaction is not on the shard of the run: open it on the pool of ShardFor(tenant)")

// Pooled is the part of a shard's store that says which database it is on
// (pgstore.Store.Pool): CreateRunsTx and SendSignalTx check that the
// caller's transaction is on it.
type Pooled interface {
	Pool() *pgxpool.Pool
}

// CreateRunsTx creates runs in the caller's transaction, which must be on
// the database of the runs' shard: every run of the call must belong to
// one shard (their tenants' logical shards mapped to it), else the error
// wraps store.ErrInvalidRun and ErrWrongShard, and nothing is written. A
// transaction on another shard's database is refused too (ErrWrongShard),
// when the shard's store says which database it is on (Pooled).
func (s *Store) CreateRunsTx(ctx context.Context, tx pgx.Tx, runs []store.NewRun) error {
	order, _, err := s.byTenant(runs)
	if err != nil {
		return err
	}
	if len(order) == 0 {
		return nil
	}
	if len(order) > 1 {
		return fmt.Errorf("shardstore: %w: the runs belong to %d shards: %w", store.ErrInvalidRun, len(order), ErrWrongShard)
	}
	i := order[0]
	if err := s.checkTx(i, tx); err != nil {
		return err
	}
	if err := s.shards[i].Store.CreateRunsTx(ctx, tx, runs); err != nil {
		return err
	}
	for _, r := range runs {
		s.remember(r.ID, i)
	}
	return nil
}

// SendSignalTx sends a signal in the caller's transaction, which must be
// on the database of the run's shard (ErrWrongShard otherwise).
func (s *Store) SendSignalTx(ctx context.Context, tx pgx.Tx, workflow string, id dag.RunID, step string, payload []byte) (bool, error) {
	i, err := s.locate(ctx, id)
	if err != nil {
		return false, err
	}
	if err := s.checkTx(i, tx); err != nil {
		return false, err
	}
	return s.shards[i].Store.SendSignalTx(ctx, tx, workflow, id, step, payload)
}

// checkTx refuses tx when it is not on the database of shard i, as far as
// the connection's configuration tells (host, port and database).
func (s *Store) checkTx(i int, tx pgx.Tx) error {
	p, ok := s.shards[i].Store.(Pooled)
	if !ok || tx == nil || tx.Conn() == nil {
		return nil
	}
	want, got := p.Pool().Config().ConnConfig, tx.Conn().Config()
	if hostOf(want.Host) != hostOf(got.Host) || want.Port != got.Port || want.Database != got.Database {
		return fmt.Errorf("shardstore: shard %s is %s:%d/%s, the transaction %s:%d/%s: %w",
			s.shards[i].Name, want.Host, want.Port, want.Database, got.Host, got.Port, got.Database, ErrWrongShard)
	}
	return nil
}

// hostOf spells the local host one way, so that a pool opened on
// "localhost" and a transaction on "127.0.0.1" are not taken for two
// servers.
func hostOf(h string) string {
	switch h {
	case "localhost", "127.0.0.1", "::1":
		return "localhost"
	}
	return h
}
