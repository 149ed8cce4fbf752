package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// TestUpdatesStayOnTheirPage: runs made together are claimed together and
// finish together, so one statement updates most rows of a page. The new
// version must find room on its own page (a HOT update: no index entry;
// the runs have four indexes): a task's at its claim, a run's when it
// finishes. (A task's completion fits once its claim's version is pruned,
// which the other tests' transactions may hold back.) At the fillfactors
// of version 10 (80 for runs, 50 for tasks) 468 of these runs and 26 of
// their tasks moved.
func TestUpdatesStayOnTheirPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stores(t, 1, nil)[0]
	const n = 600
	runs := make([]store.NewRun, n)
	for i := range runs {
		runs[i] = newRun("bench.Single", fmt.Sprintf("tenant-%d", i%7), step("only"))
		runs[i].Input = []byte(fmt.Sprintf(`{"n":%d}`, i))
	}
	require.NoError(t, s.CreateRuns(ctx, runs))
	runPages, taskPages := pagesOf(t, s, runs)

	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: n, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, n)
	_, tasksClaimed := pagesOf(t, s, runs)
	require.Zero(t, moved(taskPages, tasksClaimed), "tasks whose claim left their page, of %d", n)

	results := make([]store.TaskResult, n)
	for i, c := range claimed {
		results[i] = completed(c)
	}
	_, err = s.CompleteTasks(ctx, results)
	require.NoError(t, err)
	for _, r := range runs {
		got, err := s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, got.Status)
	}
	runsFinished, _ := pagesOf(t, s, runs)
	require.Zero(t, moved(runPages, runsFinished), "runs whose finishing update left their page, of %d", n)
}

// moved counts the rows whose page differs between before and after.
func moved(before, after map[dag.RunID]int64) int {
	n := 0
	for id, page := range before {
		if after[id] != page {
			n++
		}
	}
	return n
}

// pagesOf returns the heap page of each run's row and of its task's.
func pagesOf(t *testing.T, s *pgstore.Store, runs []store.NewRun) (map[dag.RunID]int64, map[dag.RunID]int64) {
	t.Helper()
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID.String()
	}
	page := func(query string) map[dag.RunID]int64 {
		rows, err := s.Pool().Query(context.Background(), query, ids)
		require.NoError(t, err)
		defer rows.Close()
		out := make(map[dag.RunID]int64, len(ids))
		for rows.Next() {
			var id string
			var p int64
			require.NoError(t, rows.Scan(&id, &p))
			rid, err := dag.ParseRunID(id)
			require.NoError(t, err)
			out[rid] = p
		}
		require.NoError(t, rows.Err())
		require.Len(t, out, len(ids))
		return out
	}
	return page(`SELECT id::text, (ctid::text::point)[0]::bigint FROM dagen_runs WHERE id = ANY($1::uuid[])`),
		page(`SELECT run_id::text, (ctid::text::point)[0]::bigint FROM dagen_tasks WHERE run_id = ANY($1::uuid[])`)
}

// TestMigrationGivesRangesRoom: version 11 sets the fillfactors of the
// ranges that exist, and the ranges made since have them too.
func TestMigrationGivesRangesRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 2)
	applyFirst(t, pool, 10)
	_, err := pool.Exec(ctx, `INSERT INTO dagen_runs (id, workflow, fingerprint, tenant, status, pending, created_at)
		VALUES ('00000000-0000-0000-0000-000000000001', 'w', 'fp', 'acme', 'RUNNING', 1, now())`)
	require.NoError(t, err, "version 10 holds a range from the first id")
	require.NoError(t, pgstore.Migrate(ctx, pool))
	s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	fresh := newRun("w", "acme", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{fresh}))

	rows, err := pool.Query(ctx, `
		SELECT p.relname, c.relname, coalesce(array_to_string(c.reloptions, ','), '')
		FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent
		WHERE i.inhparent IN ('dagen_runs'::regclass, 'dagen_tasks'::regclass)`)
	require.NoError(t, err)
	defer rows.Close()
	want := map[string]string{"dagen_runs": "fillfactor=45", "dagen_tasks": "fillfactor=35"}
	seen := map[string]int{}
	for rows.Next() {
		var parent, name, opts string
		require.NoError(t, rows.Scan(&parent, &name, &opts))
		require.Contains(t, opts, want[parent], name)
		seen[parent]++
	}
	require.NoError(t, rows.Err())
	require.GreaterOrEqual(t, seen["dagen_runs"], 2, "the old range and the fresh run's")
	require.Equal(t, seen["dagen_runs"], seen["dagen_tasks"])
}

// TestUpdateTasksChecksItsHintsByKey: UpdateTasks takes each row where
// GetTasks found it only when the row there still has the key. A hint to
// another task's row, a hint to a version this transaction has since
// replaced, and no hint all update the task with the key, and only it.
func TestUpdateTasksChecksItsHintsByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := stores(t, 1, nil)[0]
	runs := []store.NewRun{newRun("w", "acme", step("a")), newRun("w", "acme", step("a")), newRun("w", "acme", step("a"))}
	require.NoError(t, s.CreateRuns(ctx, runs))
	ctids := make([]pgtype.TID, len(runs))
	for i, r := range runs {
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT ctid FROM dagen_tasks WHERE run_id = $1 AND name = 'a'`, r.ID.String()).Scan(&ctids[i]))
	}

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	// The third task's row moves: its hint points at a dead version.
	_, err = tx.Exec(ctx, `UPDATE dagen_tasks SET reason = 'moved' WHERE run_id = $1 AND name = 'a'`, runs[2].ID.String())
	require.NoError(t, err)
	keys := make([]pgtype.UUID, len(runs))
	for i, r := range runs {
		keys[i] = pgtype.UUID{Bytes: r.ID, Valid: true}
	}
	hints := []pgtype.TID{ctids[1], {}, ctids[2]} // another's row, none, a dead version
	n := len(runs)
	p := dbsqlc.UpdateTasksParams{
		RunIds: keys, Names: []string{"a", "a", "a"}, Hints: hints,
		Statuses: []string{"COMPLETED", "FAILED", "COMPLETED"},
		Outputs:  [][]byte{[]byte("out0"), nil, []byte("out2")},
		Errors:   []string{"", "boom", ""}, Reasons: make([]string, n),
		WakeAts: make([]pgtype.Timestamptz, n), FinishedAts: make([]pgtype.Timestamptz, n),
		LogCompleted: make([]bool, n), NewRounds: make([]bool, n), ExpectClaim: make([]int64, n),
	}
	require.NoError(t, dbsqlc.New().UpdateTasks(ctx, tx, p))
	require.NoError(t, tx.Commit(ctx))

	want := []struct{ status, output, err string }{{"COMPLETED", "out0", ""}, {"FAILED", "", "boom"}, {"COMPLETED", "out2", ""}}
	for i, r := range runs {
		var status, errText string
		var output []byte
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT status, output, error FROM dagen_tasks WHERE run_id = $1 AND name = 'a'`, r.ID.String()).Scan(&status, &output, &errText))
		require.Equal(t, want[i].status, status, "task %d", i)
		require.Equal(t, want[i].output, string(output), "task %d", i)
		require.Equal(t, want[i].err, errText, "task %d", i)
	}
}
