package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dagenhq/dagen/runtime/store"
)

var _ store.Notifier = (*Store)(nil)

// Subscribe implements store.Notifier with LISTEN on a connection of its
// own, taken out of the pool for the subscription's lifetime. Every
// transaction that enqueues work notifies the schema's channel on commit.
// If the connection is lost, Subscribe reconnects in the background and
// sends one hint after it does, since notifications may have been missed.
// Behind a transaction-pooling PgBouncer LISTEN does not work; workers
// then rely on polling, which stays the truth anyway.
func (s *Store) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	conn, err := s.listen(ctx)
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	ch := make(chan struct{}, 1)
	hint := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	go func() {
		defer func() {
			if conn != nil {
				_ = conn.Close(context.WithoutCancel(ctx))
			}
		}()
		for {
			_, err := conn.WaitForNotification(ctx)
			if err == nil {
				hint()
				continue
			}
			if ctx.Err() != nil {
				return
			}
			// The connection failed: reconnect until ctx ends.
			_ = conn.Close(context.WithoutCancel(ctx))
			conn = nil
			for conn == nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				if c, err := s.listen(ctx); err == nil {
					conn = c
				}
			}
			hint()
		}
	}()
	return ch, nil
}

// listen takes a connection out of the pool and listens on the schema's
// channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire a connection: %w", err)
	}
	conn := pc.Hijack()
	channel, err := s.q.NotifyChannel(ctx, conn)
	if err == nil {
		_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
	}
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("listen: %w", err)
	}
	return conn, nil
}
