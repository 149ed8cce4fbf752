package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/shardstore"
)

// TestShardsCommands: migrate up and status run on every shard; runs ls
// lists the runs of all of them as one, merged and counted.
func TestShardsCommands(t *testing.T) {
	t.Parallel()
	var parts []string
	var urls []shardstore.ShardURL
	for _, name := range []string{"a", "b", "c"} {
		u := pgtest.SchemaURL(t, pgtest.Schema(t))
		parts = append(parts, name+"="+u)
		urls = append(urls, shardstore.ShardURL{Name: name, URL: u})
	}
	shards := strings.Join(parts, " ")
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := dagen(t, args...)
		if code != want {
			t.Fatalf("dagen %s: exit %d, want %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	run(cli.ExitFailure, "migrate", "status", "-shards", shards)
	out := run(cli.ExitOK, "migrate", "up", "-shards", shards)
	for _, name := range []string{"a", "b", "c"} {
		if !strings.Contains(out, "shard "+name+":\n") {
			t.Errorf("migrate up says nothing of shard %s:\n%s", name, out)
		}
	}
	if n := strings.Count(out, "is now at version"); n != 3 {
		t.Errorf("migrate up migrated %d shards, want 3:\n%s", n, out)
	}
	run(cli.ExitOK, "migrate", "status", "-shards", shards)

	ctx := context.Background()
	st, err := shardstore.Open(ctx, urls, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []dag.RunID
	for k := range 30 {
		tenant := fmt.Sprintf("cli-%d", k)
		r := store.NewRun{ID: dag.NewRunIDIn(store.LogicalShard(tenant)), Workflow: "wf", Fingerprint: "fp", Tenant: tenant, Input: []byte(`1`),
			Tasks: []store.NewTask{{Name: "a", Kind: store.KindStep, MaxAttempts: 1, Signature: "wf"}}}
		if err := st.CreateRuns(ctx, []store.NewRun{r}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	out = run(cli.ExitOK, "runs", "ls", "-shards", shards, "-limit", "100")
	for _, id := range ids {
		if strings.Count(out, id.String()) != 1 {
			t.Errorf("run %s listed %d times:\n%s", id, strings.Count(out, id.String()), out)
		}
	}
	if !strings.Contains(out, "30 running") {
		t.Errorf("the counts of every shard add up to 30 running:\n%s", out)
	}
	// Paged: the second page starts after the first's last run, on every
	// shard.
	out = run(cli.ExitOK, "runs", "ls", "-shards", shards, "-limit", "20")
	if !strings.Contains(out, "more: add -after "+ids[10].String()) {
		t.Errorf("the first page of 20, newest first, ends at the 11th run:\n%s", out)
	}
	out = run(cli.ExitOK, "runs", "show", "-shards", shards, ids[3].String())
	if !strings.Contains(out, "cli-3") {
		t.Errorf("runs show finds a run on its shard:\n%s", out)
	}
}
