package pgstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/runtime/store"
)

var _ store.Elector = (*Store)(nil)

// leader is the dedicated connection that holds the schema's leader lock.
type leader struct {
	mu   sync.Mutex
	conn *pgx.Conn // nil unless this store leads
}

// Lead implements store.Elector with a session-level advisory lock per
// schema, held on a connection taken out of the pool. While this store
// leads, Lead pings that connection: if it was lost, so was the lock, and
// Lead reports false (the next call tries to take it again).
func (s *Store) Lead(ctx context.Context) (bool, error) {
	s.leader.mu.Lock()
	defer s.leader.mu.Unlock()
	if c := s.leader.conn; c != nil {
		if err := c.Ping(ctx); err == nil {
			return true, nil
		}
		_ = c.Close(context.WithoutCancel(ctx))
		s.leader.conn = nil
		return false, nil
	}
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("lead: acquire a connection: %w", err)
	}
	ok, err := s.q.TryLeaderLock(ctx, pc)
	if err != nil || !ok {
		pc.Release()
		if err != nil {
			return false, fmt.Errorf("lead: take the leader lock: %w", err)
		}
		return false, nil
	}
	s.leader.conn = pc.Hijack()
	return true, nil
}

// Resign implements store.Elector: it releases the lock and closes the
// dedicated connection.
func (s *Store) Resign(ctx context.Context) error {
	s.leader.mu.Lock()
	defer s.leader.mu.Unlock()
	c := s.leader.conn
	if c == nil {
		return nil
	}
	s.leader.conn = nil
	err := s.q.ReleaseLeaderLock(ctx, c)
	// Closing ends the session, which releases the lock even if the
	// unlock failed.
	if cerr := c.Close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("resign: %w", err)
	}
	return nil
}

// dropLeader closes the leader's connection, if any, without asking the
// database anything: the session's end releases the lock. The close itself
// is bounded by ctx.
func (s *Store) dropLeader(ctx context.Context) {
	s.leader.mu.Lock()
	c := s.leader.conn
	s.leader.conn = nil
	s.leader.mu.Unlock()
	if c != nil {
		_ = c.Close(ctx)
	}
}
