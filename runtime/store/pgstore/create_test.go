package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestCreateRunsErrors checks the errors of the one-round-trip create: an
// existing run is named, a tenant past the fair queue's limit is explained,
// and neither leaves anything behind.
func TestCreateRunsErrors(t *testing.T) {
	ctx := context.Background()
	s := stores(t, 1, nil)[0]

	existing := newRun("w", "t1", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{existing}))
	fresh := newRun("w", "t1", step("a"), step("b", "a"))
	err := s.CreateRuns(ctx, []store.NewRun{fresh, existing})
	require.ErrorIs(t, err, store.ErrRunExists)
	require.ErrorContains(t, err, existing.ID.String())
	_, err = s.GetRun(ctx, fresh.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound, "the batch is all or nothing")

	// The next tenant would get group id BlockLength: one too many.
	_, err = s.Pool().Exec(ctx, `SELECT setval('dagen_tenant_group_seq', $1)`, store.BlockLength-1)
	require.NoError(t, err)
	late := newRun("w", "one-too-many", step("a"))
	err = s.CreateRuns(ctx, []store.NewRun{late})
	require.ErrorContains(t, err, "more than 1048576 tenants")
	_, err = s.GetRun(ctx, late.ID)
	require.ErrorIs(t, err, store.ErrRunNotFound)

	// Known tenants still get in.
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{newRun("w", "t1", step("a"))}))
}

// TestLargeCreationClosesItsConnection checks that a creation of many
// tasks does not leave its encoded arguments in the pool: pgx keeps a
// connection's last arguments until its next statement, so a large
// creation's stayed in an idle connection (see docs/performance.md, "Large
// creations on a connection of their own"). The connection that carried
// it is closed; one that carried a small creation goes back to the pool.
func TestLargeCreationClosesItsConnection(t *testing.T) {
	ctx := context.Background()
	pool, log := tracedPool(t)
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)

	var large []store.NewRun
	for range 500 {
		tasks := []store.NewTask{step("root")}
		for i := range 40 {
			tasks = append(tasks, step(fmt.Sprint("c", i), "root"))
		}
		large = append(large, newRun("fan", "t", tasks...))
	}
	last := func() *pgx.Conn { // that sent the last InsertRuns
		log.mu.Lock()
		defer log.mu.Unlock()
		for i := len(log.stmts) - 1; i >= 0; i-- {
			if strings.HasPrefix(log.stmts[i].sql, "-- name: InsertRuns ") {
				return log.stmts[i].conn
			}
		}
		t.Fatal("no InsertRuns ran")
		return nil
	}
	require.NoError(t, s.CreateRuns(ctx, large[:1]))
	require.False(t, last().IsClosed(), "a small creation's connection went back to the pool")
	require.NoError(t, s.CreateRuns(ctx, large[1:])) // 20,459 tasks
	require.True(t, last().IsClosed(), "a large creation's connection was closed")

	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM dagen_tasks").Scan(&n))
	require.Equal(t, 500*41, n)
}
