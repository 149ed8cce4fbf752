package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
	"github.com/dagenhq/dagen/runtime/store/pgstore/internal/dbsqlc"
)

// rollingBack is a pgstore that the conformance suite's rollback cases
// can roll back (storetest.RollBacker).
type rollingBack struct{ *pgstore.Store }

func (s rollingBack) RollBack(ctx context.Context, run dag.RunID, step string) error {
	return rollBack(ctx, s.Store, run, step)
}

// rollBack makes the RUNNING task step of run look as a standby promoted
// before it saw the task's last claim shows it: QUEUED at the attempt
// before, in the ready queue, without the claim's lease, and the event
// sequence back where it was before the claim, so that the next claim of
// the task starts the same attempt with the same STARTED event id.
func rollBack(ctx context.Context, s *pgstore.Store, run dag.RunID, step string) error {
	return pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		var started int64
		var sig, tenant string
		err := tx.QueryRow(ctx, `
			SELECT t.started_event, t.signature, r.tenant
			FROM dagen_tasks t JOIN dagen_runs r ON r.id = t.run_id
			WHERE t.run_id = $1 AND t.name = $2 AND t.status = 'RUNNING'
			FOR UPDATE OF t`, run.String(), step).Scan(&started, &sig, &tenant)
		if err != nil {
			return fmt.Errorf("roll back %s/%s: read the task: %w", run, step, err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE dagen_tasks
			SET status = 'QUEUED', attempt = attempt - 1, claim = 0, worker = '', started_event = NULL, started_at = NULL
			WHERE run_id = $1 AND name = $2`, run.String(), step); err != nil {
			return fmt.Errorf("roll back %s/%s: %w", run, step, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM dagen_leases WHERE $1 = ANY(events)`, started); err != nil {
			return fmt.Errorf("roll back %s/%s: delete the lease: %w", run, step, err)
		}
		if _, err := tx.Exec(ctx, `SELECT setval('dagen_event_seq', $1)`, started-1); err != nil {
			return fmt.Errorf("roll back %s/%s: the event sequence: %w", run, step, err)
		}
		err = dbsqlc.New().Enqueue(ctx, tx, dbsqlc.EnqueueParams{
			RunIds: []pgtype.UUID{{Bytes: run, Valid: true}}, Tasks: []string{step},
			Signatures: []string{sig}, Tenants: []string{tenant}, IfQueued: []bool{false},
		})
		if err != nil {
			return fmt.Errorf("roll back %s/%s: enqueue: %w", run, step, err)
		}
		return nil
	})
}

// TestRollbackAcrossStores: the worker that holds the lost claim is
// another process, whose store decides its completion on the claim's view
// (leasebook.View), which says RUNNING at attempt 1 and the STARTED event
// id the new claim got again. UpdateTasks must refuse it on the token, and
// the store decide again on the row.
func TestRollbackAcrossStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, 8)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	w1s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)
	w2s, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)

	for _, outcome := range []store.Outcome{store.OutcomeCompleted, store.OutcomeFailed} {
		t.Run(string(outcome), func(t *testing.T) {
			r := newRun("wf", "t", step("a"), step("b", "a"))
			require.NoError(t, w1s.CreateRuns(ctx, []store.NewRun{r}))
			claim := func(s *pgstore.Store) store.ClaimedTask {
				t.Helper()
				cts, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute})
				require.NoError(t, err)
				require.Len(t, cts, 1)
				return cts[0]
			}
			started := func() (ev int64) {
				t.Helper()
				require.NoError(t, pool.QueryRow(ctx, `SELECT started_event FROM dagen_tasks WHERE run_id = $1 AND name = 'a'`, r.ID.String()).Scan(&ev))
				return ev
			}
			w1 := claim(w1s)
			ev := started()
			require.NoError(t, rollBack(ctx, w1s, r.ID, "a"))
			w2 := claim(w2s)
			require.Equal(t, w1.Attempt, w2.Attempt)
			require.Equal(t, ev, started(), "the new claim got the lost claim's STARTED event id again")
			require.NotEqual(t, w1.Claim, w2.Claim)

			lost := store.TaskResult{RunID: r.ID, Step: "a", Attempt: w1.Attempt, Claim: w1.Claim, Outcome: outcome, Output: []byte(`"lost"`), Error: "lost"}
			outs, err := w1s.CompleteTasks(ctx, []store.TaskResult{lost})
			require.NoError(t, err)
			require.Equal(t, store.OutcomeStale, outs[0].Outcome, "the lost claim's result is refused")
			run, tasks, err := w1s.ReadRun(ctx, r.ID)
			require.NoError(t, err)
			require.Equal(t, store.RunRunning, run.Status)
			require.Equal(t, store.TaskRunning, tasks[0].Status)

			outs, err = w2s.CompleteTasks(ctx, []store.TaskResult{completed(w2)})
			require.NoError(t, err)
			require.Equal(t, store.OutcomeCompleted, outs[0].Outcome)
			require.Equal(t, 1, outs[0].Enqueued)
			b := claim(w2s)
			require.Equal(t, "b", b.Step)
			require.Equal(t, []byte(`1`), b.Parents[0].Output, "b runs on the new claim's output")
			outs, err = w2s.CompleteTasks(ctx, []store.TaskResult{completed(b)})
			require.NoError(t, err)
			require.Equal(t, store.RunCompleted, outs[0].RunStatus)
		})
	}
}

// TestRollbackKeepsTheNewClaimsLease: after a rollback the new claim's
// lease takes the id of the lease of the lost claim, which the store that
// made it still counts. When the store lets go of the lost lease, the new
// one must stay: without it, the new attempt would never be rescued when
// its worker dies, as it is here.
func TestRollbackKeepsTheNewClaimsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	s := newStore(t, clock.Now, 4)
	pool := s.Pool()
	r := newRun("wf", "t", step("a"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
	claim := func() store.ClaimedTask {
		t.Helper()
		cts, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, cts, 1)
		return cts[0]
	}
	lease := func() (id, token int64) {
		t.Helper()
		require.NoError(t, pool.QueryRow(ctx, `SELECT id, token FROM dagen_leases WHERE $1 = ANY(run_ids)`, r.ID.String()).Scan(&id, &token))
		return id, token
	}
	w1 := claim()
	id1, token1 := lease()
	require.Equal(t, w1.Claim, token1, "a claim of one task: its token is the lease's")
	require.NoError(t, rollBack(ctx, s, r.ID, "a"))
	w2 := claim()
	id2, token2 := lease()
	require.Equal(t, id1, id2, "the new lease has the lost one's id")
	require.Equal(t, w2.Claim, token2)

	// Another run's completion deletes the leases the store let go of,
	// the lost claim's among them.
	x := newRun("wf", "t", step("x"))
	require.NoError(t, s.CreateRuns(ctx, []store.NewRun{x}))
	xs := claim()
	_, err := s.CompleteTasks(ctx, []store.TaskResult{completed(xs)})
	require.NoError(t, err)
	id3, token3 := lease()
	require.Equal(t, []int64{id2, token2}, []int64{id3, token3}, "the new claim keeps its lease")

	outs, err := s.CompleteTasks(ctx, []store.TaskResult{completed(w1)})
	require.NoError(t, err)
	require.Equal(t, store.OutcomeStale, outs[0].Outcome)

	// w2's worker dies: its lease ends, and the attempt is rescued.
	clock.Advance(2 * time.Minute)
	n, err := s.RescueExpired(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the new claim's attempt is rescued")
	events, err := s.ListEvents(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, store.EventQueued, events[len(events)-1].Type)
	require.Equal(t, store.EventRescued, events[len(events)-2].Type)
	outs, err = s.CompleteTasks(ctx, []store.TaskResult{completed(w2)})
	require.NoError(t, err)
	require.Equal(t, store.OutcomeStale, outs[0].Outcome, "rescued: w2's late result is stale too")
	w3 := claim()
	require.Equal(t, 2, w3.Attempt)
	outs, err = s.CompleteTasks(ctx, []store.TaskResult{completed(w3)})
	require.NoError(t, err)
	require.Equal(t, store.OutcomeCompleted, outs[0].Outcome)
}
