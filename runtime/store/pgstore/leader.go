package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

var _ store.Elector = (*Store)(nil)

// leader is this store's part in the schema's leader lease (dagen_leader,
// migration 015): a lease needs no session, so it works through a
// transaction-pooling PgBouncer and survives a failover, where a session's
// advisory lock would be lost with the old primary while its holder still
// believed it led.
type leader struct {
	mu     sync.Mutex
	holder string // this store's random token in dagen_leader.holder
	term   int64  // the lease's term while this store leads; 0 when it does not
	led    bool   // this store took the lease once: its duties are fenced
}

func newHolder() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Lead implements store.Elector with the lease: one upsert that takes a
// free or expired lease, or renews this store's, until ttl from now.
func (s *Store) Lead(ctx context.Context, ttl time.Duration) (bool, error) {
	s.leader.mu.Lock()
	defer s.leader.mu.Unlock()
	term, err := s.q.TakeLead(ctx, s.pool, dbsqlc.TakeLeadParams{
		Now: s.clock(), Holder: s.leader.holder, Ttl: pgtype.Interval{Microseconds: ttl.Microseconds(), Valid: true},
	})
	if errors.Is(err, pgx.ErrNoRows) {
		s.leader.term = 0
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lead: take the leader's lease: %w", err)
	}
	s.leader.term, s.leader.led = term, true
	return true, nil
}

// Resign implements store.Elector: it gives the lease up, so the next
// store to call Lead takes it at once.
func (s *Store) Resign(ctx context.Context) error {
	s.leader.mu.Lock()
	defer s.leader.mu.Unlock()
	if s.leader.term == 0 {
		return nil
	}
	s.leader.term = 0
	if err := s.q.GiveUpLead(ctx, s.pool, s.leader.holder); err != nil {
		return fmt.Errorf("resign: %w", err)
	}
	return nil
}

// fenced runs a leader's duty: it queues, ahead of the duty's statements
// in tx, the check that this store still holds the lease in the term it
// took, and fails the duty with store.ErrNotLeader when it does not. A store
// that never led (a test, a tool) is not fenced.
func (s *Store) fenced(ctx context.Context, db dbsqlc.DBTX) error {
	s.leader.mu.Lock()
	term, led, holder := s.leader.term, s.leader.led, s.leader.holder
	s.leader.mu.Unlock()
	if !led {
		return nil
	}
	holds, err := s.q.HoldsLead(ctx, db, dbsqlc.HoldsLeadParams{Holder: holder, Term: term, Now: s.clock()})
	if err != nil {
		return fmt.Errorf("check the leader's lease: %w", err)
	}
	if !holds {
		return store.ErrNotLeader
	}
	return nil
}
