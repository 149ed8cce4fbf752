package memstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
)

// CreateRunsTx implements store.TxTriggers: a store in memory has no part
// in the caller's database transaction, so it refuses, with an error
// wrapping store.ErrNoTx, and creates nothing. Use CreateRuns, or a
// Postgres store (pgstore).
func (s *Store) CreateRunsTx(_ context.Context, _ pgx.Tx, runs []store.NewRun) error {
	return fmt.Errorf("create %d runs in a transaction: memstore: %w", len(runs), store.ErrNoTx)
}

// SendSignalTx implements store.TxTriggers: it refuses, as CreateRunsTx
// does, and sends nothing.
func (s *Store) SendSignalTx(_ context.Context, _ pgx.Tx, _ string, id dag.RunID, step string, _ []byte) (bool, error) {
	return false, fmt.Errorf("send signal %s of run %s in a transaction: memstore: %w", step, id, store.ErrNoTx)
}
