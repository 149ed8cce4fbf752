package engine

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/migrations"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestLegacyRunsAfterUpgrade starts runs on a schema at version 1, as the
// code before task signatures wrote them (run in flight: a done, b queued,
// c pending), migrates the schema, and checks that a worker whose
// definition has another shape leaves them alone while one with their shape
// finishes them, reading parents by name.
func TestLegacyRunsAfterUpgrade(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 8)
	all, err := migrations.All()
	require.NoError(t, err)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	exec(`CREATE TABLE dagen_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	exec(all[0].SQL)
	exec(`INSERT INTO dagen_migrations (version, name) VALUES (1, $1)`, all[0].Name)

	var got []string
	step := func(name string) Step {
		return Step{Name: name, OutputType: "T", Run: func(_ context.Context, in StepInput) ([]byte, error) {
			v := name
			for _, p := range in.Parents {
				s, err := ParentOutput[string](in, p.Step)
				if err != nil {
					return nil, err
				}
				v += "<" + s
			}
			got = append(got, v)
			return Encode(v)
		}}
	}
	def := func() *Definition {
		b, c := step("b"), step("c")
		b.Parents = []Parent{{Name: "a"}}
		c.Parents = []Parent{{Name: "b"}, {Name: "a"}}
		return &Definition{Name: "legacy", InputType: "In", Steps: []Step{step("a"), b, c}}
	}
	old := def()
	ids := []dag.RunID{dag.NewRunID(), dag.NewRunID()}
	exec(`INSERT INTO dagen_tenant_groups (tenant, group_id) VALUES ('t', nextval('dagen_tenant_group_seq'))`)
	for i, id := range ids {
		exec(`INSERT INTO dagen_runs (id, workflow, fingerprint, tenant, status, input, pending, created_at)
		      VALUES ($1, 'legacy', $2, 't', 'RUNNING', '1', 2, now())`, id, old.legacyFingerprint())
		exec(`INSERT INTO dagen_tasks (run_id, name, seq, kind, parents, children, pending_parents, status, max_attempts, output, attempt, finished_at)
		      VALUES ($1, 'a', 0, 'step', '{}', '{b,c}', 0, 'COMPLETED', 1, '"a"', 1, now()),
		             ($1, 'b', 1, 'step', '{a}', '{c}', 0, 'QUEUED', 1, NULL, 0, NULL),
		             ($1, 'c', 2, 'step', '{b,a}', '{}', 1, 'PENDING', 1, NULL, 0, NULL)`, id)
		exec(`INSERT INTO dagen_ready (id, run_id, task, workflow) VALUES ($1, $2, 'b', 'legacy')`, int64(i)*store.BlockLength, id)
	}

	require.NoError(t, pgstore.Migrate(ctx, pool))
	var sig string
	require.NoError(t, pool.QueryRow(ctx, `SELECT signature FROM dagen_ready LIMIT 1`).Scan(&sig))
	require.Equal(t, legacySignature("legacy", old.legacyFingerprint()), sig)

	open := func(p *pgxpool.Pool) store.Store {
		st, err := pgstore.New(ctx, p, nil)
		require.NoError(t, err)
		return st
	}
	// Another shape (c no longer reads a): it serves nothing of these runs.
	other := def()
	other.Steps[2].Parents = []Parent{{Name: "b"}}
	e, err := New(open(pool), &Config{Manual: true, WorkerID: "other"})
	require.NoError(t, err)
	require.NoError(t, e.Register(other))
	n, err := e.Poll(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a worker of another shape claims nothing")
	require.Empty(t, got)

	e, err = New(open(pool), &Config{Manual: true, WorkerID: "same"})
	require.NoError(t, err)
	require.NoError(t, e.Register(def()))
	for _, id := range ids {
		res, err := e.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.RunCompleted, res.Status)
		c, err := Output[string](res, "c")
		require.NoError(t, err)
		require.Equal(t, "c<b<a<a", c, "c reads b and a by name")
	}
}
