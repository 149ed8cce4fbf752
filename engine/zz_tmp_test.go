package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/store"
	"github.com/dagenhq/dagen/store/pgstore"
)

type countingStore struct {
	*pgstore.Store
	claims, claimed, completes, completed atomic.Int64
	claimTime, completeTime               atomic.Int64
}

func (c *countingStore) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]store.ClaimedTask, error) {
	t := time.Now()
	r, err := c.Store.ClaimTasks(ctx, p)
	c.claimTime.Add(int64(time.Since(t)))
	c.claims.Add(1)
	c.claimed.Add(int64(len(r)))
	return r, err
}
func (c *countingStore) CompleteTasks(ctx context.Context, rs []store.TaskResult) ([]store.CompletionOutcome, error) {
	t := time.Now()
	r, err := c.Store.CompleteTasks(ctx, rs)
	c.completeTime.Add(int64(time.Since(t)))
	c.completes.Add(1)
	c.completed.Add(int64(len(rs)))
	return r, err
}

func BenchmarkZZCount(b *testing.B) {
	pool := pgtest.NewPool(b, 16)
	if err := pgstore.Migrate(context.Background(), pool); err != nil {
		b.Fatal(err)
	}
	cs := &countingStore{Store: pgstore.New(pool, nil)}
	benchChain(b, cs, 1, 64)
	b.Logf("claims %d (avg %.1f, %.2fms), completes %d (avg %.1f, %.2fms)",
		cs.claims.Load(), float64(cs.claimed.Load())/float64(cs.claims.Load()), float64(cs.claimTime.Load())/float64(cs.claims.Load())/1e6,
		cs.completes.Load(), float64(cs.completed.Load())/float64(cs.completes.Load()), float64(cs.completeTime.Load())/float64(cs.completes.Load())/1e6)
}
