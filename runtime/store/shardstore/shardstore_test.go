package shardstore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
	"github.com/dagenhq/dagen/runtime/store/shardstore"
)

// pgShard returns a pgstore over a fresh, migrated schema of the test
// server.
func pgShard(t *testing.T, maxConns int32) *pgstore.Store {
	t.Helper()
	pool := pgtest.NewPool(t, maxConns)
	require.NoError(t, pgstore.Migrate(context.Background(), pool))
	st, err := pgstore.New(context.Background(), pool, nil)
	require.NoError(t, err)
	return st
}

// sharded is a sharded store and its shards' pgstores, by name.
type sharded struct {
	*shardstore.Store
	pg map[string]*pgstore.Store
}

// newSharded returns a store over one schema per name, mapped evenly.
func newSharded(t *testing.T, names ...string) sharded {
	t.Helper()
	pg := make(map[string]*pgstore.Store)
	var shards []shardstore.Shard
	for _, n := range names {
		pg[n] = pgShard(t, 8)
		shards = append(shards, shardstore.Shard{Name: n, Store: pg[n]})
	}
	s, err := shardstore.New(shards, shardstore.EvenMap(names...), nil)
	require.NoError(t, err)
	return sharded{s, pg}
}

// tenantsOn returns n tenants, named prefix-k, that s maps to shard.
func tenantsOn(s *shardstore.Store, shard, prefix string, n int) []string {
	var out []string
	for k := 0; len(out) < n; k++ {
		t := fmt.Sprintf("%s-%d", prefix, k)
		if s.ShardFor(t).Name == shard {
			out = append(out, t)
		}
	}
	return out
}

func oneStepRun(tenant string) store.NewRun {
	return store.NewRun{ID: dag.NewRunIDIn(store.LogicalShard(tenant)), Workflow: "wf", Fingerprint: "fp", Tenant: tenant, Input: []byte(`1`),
		Tasks: []store.NewTask{{Name: "a", Kind: store.KindStep, MaxAttempts: 1, Signature: "wf"}}}
}

// TestRunsLiveOnTheirTenantsShard: every run is on the shard its tenant
// maps to and on no other, whether its id carries its logical shard or
// not, and the sharded store finds each by id.
func TestRunsLiveOnTheirTenantsShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSharded(t, "a", "b", "c")
	var runs []store.NewRun
	for k := range 60 {
		r := oneStepRun(fmt.Sprintf("tenant-%d", k))
		if k%3 == 0 {
			r.ID = dag.NewRunID() // an id made by other code: its bits point anywhere
		}
		runs = append(runs, r)
	}
	require.NoError(t, s.CreateRuns(ctx, runs), "one call, over every shard")
	for _, r := range runs {
		home := s.ShardFor(r.Tenant).Name
		for name, pg := range s.pg {
			_, err := pg.GetRun(ctx, r.ID)
			if name == home {
				require.NoError(t, err, "run of %s on its shard %s", r.Tenant, home)
			} else {
				require.ErrorIs(t, err, store.ErrRunNotFound, "run of %s (shard %s) not on %s", r.Tenant, home, name)
			}
		}
		got, err := s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, r.Tenant, got.Tenant)
		name, err := s.ShardOf(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, home, name)
	}
	_, err := s.GetRun(ctx, dag.NewRunID())
	require.ErrorIs(t, err, store.ErrRunNotFound)

	// Claimed and completed through the sharded store, on their shards.
	done := 0
	for done < len(runs) {
		claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Worker: "w", Limit: 7, Lease: time.Minute})
		require.NoError(t, err)
		require.NotEmpty(t, claimed)
		results := make([]store.TaskResult, len(claimed))
		for i, ct := range claimed {
			results[i] = store.TaskResult{RunID: ct.RunID, Step: ct.Step, Attempt: ct.Attempt, Claim: ct.Claim, Outcome: store.OutcomeCompleted, Output: []byte(`2`)}
		}
		outs, err := s.CompleteTasks(ctx, results)
		require.NoError(t, err)
		for _, o := range outs {
			require.Equal(t, store.OutcomeCompleted, o.Outcome)
			require.Equal(t, store.RunCompleted, o.RunStatus)
		}
		done += len(claimed)
	}
	require.Equal(t, len(runs), done)
	counts, err := s.CountRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunCompleted: len(runs)}, counts)
}

// TestListRunsMergesShards: pages of every shard merge newest first by
// run id; keyset paging over them lists every run once.
func TestListRunsMergesShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSharded(t, "a", "b", "c")
	want := make(map[dag.RunID]bool)
	for k := range 45 {
		r := oneStepRun(fmt.Sprintf("list-%d", k))
		require.NoError(t, s.CreateRuns(ctx, []store.NewRun{r}))
		want[r.ID] = true
	}
	seen := make(map[dag.RunID]bool)
	var prev dag.RunID
	f := store.RunFilter{Limit: 7}
	pages := 0
	for {
		page, err := s.ListRuns(ctx, f)
		require.NoError(t, err)
		pages++
		for _, r := range page.Runs {
			require.False(t, seen[r.ID], "run %s listed twice", r.ID)
			seen[r.ID] = true
			if !prev.IsZero() {
				require.Negative(t, bytes.Compare(r.ID[:], prev[:]), "newest first")
			}
			prev = r.ID
		}
		if page.Next.IsZero() {
			break
		}
		f.After = page.Next
	}
	require.Equal(t, want, seen)
	require.Equal(t, 7, pages, "45 runs in pages of 7")
	one := tenantsOn(s.Store, "b", "list", 1)[0]
	page, err := s.ListRuns(ctx, store.RunFilter{Tenant: one})
	require.NoError(t, err)
	require.Len(t, page.Runs, 1)
}

// claimTenants claims up to limit tasks and counts them by tenant.
func claimTenants(t *testing.T, s store.Store, limit int) map[string]int {
	t.Helper()
	claimed, err := s.ClaimTasks(context.Background(), store.ClaimParams{Worker: "w", Limit: limit, Lease: time.Minute})
	require.NoError(t, err)
	out := make(map[string]int)
	for _, ct := range claimed {
		out[ct.Tenant]++
	}
	return out
}

// TestFairnessHeavyAndLight: a light tenant's run is among the first
// claimed behind a heavy tenant's backlog, whether the two share a shard
// (the shard's fair queue) or not (the claim's split between shards).
func TestFairnessHeavyAndLight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, lightShard string }{{"SameShard", "a"}, {"OtherShard", "b"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newSharded(t, "a", "b", "c")
			heavy := tenantsOn(s.Store, "a", "heavy", 1)[0]
			light := tenantsOn(s.Store, tc.lightShard, "light", 1)[0]
			var backlog []store.NewRun
			for range 500 {
				backlog = append(backlog, oneStepRun(heavy))
			}
			require.NoError(t, s.CreateRuns(ctx, backlog))
			require.NoError(t, s.CreateRuns(ctx, []store.NewRun{oneStepRun(light)}))
			require.Equal(t, map[string]int{heavy: 1, light: 1}, claimTenants(t, s, 2), "one each, behind 500 of the heavy tenant")
		})
	}
}

// TestClaimsSplitByQueueHeads: a claim serves every tenant with work
// once a round, as one fair queue would, however the tenants spread over
// the shards: one heavy tenant alone on a shard gets one place, not one in
// proportion to its tasks.
func TestClaimsSplitByQueueHeads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSharded(t, "a", "b", "c")
	heavy := tenantsOn(s.Store, "a", "heavy", 1)[0]
	lights := tenantsOn(s.Store, "b", "light", 3)
	var runs []store.NewRun
	for range 300 {
		runs = append(runs, oneStepRun(heavy))
	}
	for _, l := range lights {
		runs = append(runs, oneStepRun(l), oneStepRun(l))
	}
	require.NoError(t, s.CreateRuns(ctx, runs))
	want := map[string]int{heavy: 1}
	for _, l := range lights {
		want[l] = 1
	}
	require.Equal(t, want, claimTenants(t, s, 4), "a round: one place a tenant")
	require.Equal(t, want, claimTenants(t, s, 4), "and the next")
	require.Equal(t, map[string]int{heavy: 4}, claimTenants(t, s, 4), "the heavy tenant alone")
}

// chain is a workflow of four steps, a diamond: a, then b and c, then d.
func chain(name string) *engine.Definition {
	step := func(n string, parents ...string) engine.Step {
		var ps []engine.Parent
		for _, p := range parents {
			ps = append(ps, engine.Parent{Name: p})
		}
		return engine.Step{Name: n, Parents: ps, Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
			return engine.Encode(n)
		}}
	}
	return &engine.Definition{Name: name, Steps: []engine.Step{step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")}}
}

func startEngine(t *testing.T, st store.Store, id string, defs ...*engine.Definition) *engine.Engine {
	t.Helper()
	e, err := engine.New(st, &engine.Config{WorkerID: id, PollInterval: 20 * time.Millisecond, Concurrency: 16, HeartbeatInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	for _, d := range defs {
		require.NoError(t, e.Register(d))
	}
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	return e
}

// TestEngineRunsOf300Tenants: two engines over one sharded store of three
// shards complete the runs of 300 tenants, each run and all its tasks on
// its tenant's shard, every task completed once, the counts adding up.
func TestEngineRunsOf300Tenants(t *testing.T) {
	t.Parallel()
	runsOf300Tenants(t, newSharded(t, "a", "b", "c"))
}

// TestEngineRunsOf300TenantsOnThreeClusters is the longer variant: each
// shard a Postgres cluster of its own (initdb). Set
// DAGEN_SHARD_CLUSTERS=1 to run it (make test-shards-clusters).
func TestEngineRunsOf300TenantsOnThreeClusters(t *testing.T) {
	if os.Getenv("DAGEN_SHARD_CLUSTERS") == "" {
		t.Skip("three clusters of its own: set DAGEN_SHARD_CLUSTERS=1 (make test-shards-clusters)")
	}
	t.Parallel()
	ctx := context.Background()
	pg := make(map[string]*pgstore.Store)
	var shards []shardstore.Shard
	for _, n := range []string{"a", "b", "c"} {
		c := pgtest.NewPrimary(t, pgtest.ClusterOptions{})
		st, err := pgstore.OpenConfig(ctx, c.URL("postgres"), nil)
		require.NoError(t, err)
		t.Cleanup(st.Close)
		pg[n] = st
		shards = append(shards, shardstore.Shard{Name: n, Store: st})
	}
	s, err := shardstore.New(shards, shardstore.EvenMap("a", "b", "c"), nil)
	require.NoError(t, err)
	runsOf300Tenants(t, sharded{s, pg})
}

func runsOf300Tenants(t *testing.T, s sharded) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A second process: its own sharded store over the same shards.
	var shards []shardstore.Shard
	for _, n := range []string{"a", "b", "c"} {
		shards = append(shards, shardstore.Shard{Name: n, Store: s.pg[n]})
	}
	s2, err := shardstore.New(shards, shardstore.EvenMap("a", "b", "c"), nil)
	require.NoError(t, err)
	e1 := startEngine(t, s.Store, "w1", chain("diamond"))
	startEngine(t, s2, "w2", chain("diamond"))

	const tenants = 300
	reqs := make([]engine.TriggerRequest, tenants)
	for k := range reqs {
		reqs[k] = engine.TriggerRequest{Workflow: "diamond", Tenant: fmt.Sprintf("t%03d", k), Input: k}
	}
	ids := make([]dag.RunID, 0, tenants)
	for k := 0; k < tenants; k += 50 {
		got, err := e1.TriggerMany(ctx, reqs[k:k+50]) // batches over every shard
		require.NoError(t, err)
		ids = append(ids, got...)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	results := make([]*engine.RunResult, len(ids))
	for k, id := range ids {
		wg.Go(func() { results[k], errs[k] = e1.Wait(ctx, id) })
	}
	wg.Wait()
	perShard := make(map[string]int)
	for k, id := range ids {
		require.NoError(t, errs[k], "run %d", k)
		require.Equal(t, store.RunCompleted, results[k].Status)
		tenant := reqs[k].Tenant
		require.Equal(t, store.LogicalShard(tenant), id.Shard(), "the id carries its tenant's logical shard")
		home := s.ShardFor(tenant).Name
		perShard[home]++
		_, tasks, err := s.pg[home].ReadRun(ctx, id)
		require.NoError(t, err, "run of %s on its shard %s", tenant, home)
		require.Len(t, tasks, 4)
		for _, task := range tasks {
			require.Equal(t, store.TaskCompleted, task.Status)
			require.Equal(t, 1, task.Attempt, "each task ran once")
		}
		events, err := s.ListEvents(ctx, id)
		require.NoError(t, err)
		started := 0
		for _, ev := range events {
			if ev.Type == store.EventStarted {
				started++
			}
		}
		require.Equal(t, 4, started)
	}
	require.Len(t, perShard, 3, "every shard had runs: %v", perShard)
	counts, err := s.CountRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Equal(t, map[store.RunStatus]int{store.RunCompleted: tenants}, counts)
	for name, pg := range s.pg {
		c, err := pg.CountRuns(ctx, store.RunFilter{})
		require.NoError(t, err)
		require.Equal(t, perShard[name], c[store.RunCompleted], "shard %s", name)
	}
	workers, err := s.Workers(ctx)
	require.NoError(t, err)
	require.Len(t, workers, 2, "each worker once, merged over the shards")
}

// TestTxTriggersOnTheShardsDatabase: a trigger in the caller's
// transaction goes through on the pool of its tenant's shard, and is
// refused, writing nothing, on another shard's database or for runs of
// several shards.
func TestTxTriggersOnTheShardsDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := pgtest.NewPrimary(t, pgtest.ClusterOptions{})
	other, err := pgstore.OpenConfig(ctx, cluster.URL("postgres"), nil)
	require.NoError(t, err)
	t.Cleanup(other.Close)
	local := pgShard(t, 4)
	s, err := shardstore.New([]shardstore.Shard{{Name: "a", Store: local}, {Name: "b", Store: other}}, shardstore.EvenMap("a", "b"), nil)
	require.NoError(t, err)
	onA, onB := tenantsOn(s, "a", "tx", 1)[0], tenantsOn(s, "b", "tx", 1)[0]

	tx, err := local.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	wrong := oneStepRun(onB)
	require.ErrorIs(t, s.CreateRunsTx(ctx, tx, []store.NewRun{wrong}), shardstore.ErrWrongShard, "b's run in a's database")
	mixed := []store.NewRun{oneStepRun(onA), oneStepRun(onB)}
	err = s.CreateRunsTx(ctx, tx, mixed)
	require.ErrorIs(t, err, shardstore.ErrWrongShard)
	require.ErrorIs(t, err, store.ErrInvalidRun)
	right := oneStepRun(onA)
	require.NoError(t, s.CreateRunsTx(ctx, tx, []store.NewRun{right}))
	require.NoError(t, tx.Commit(ctx))
	got, err := s.GetRun(ctx, right.ID)
	require.NoError(t, err)
	require.Equal(t, onA, got.Tenant)
	for _, r := range append(mixed, wrong) {
		_, err := s.GetRun(ctx, r.ID)
		require.ErrorIs(t, err, store.ErrRunNotFound)
	}
}
