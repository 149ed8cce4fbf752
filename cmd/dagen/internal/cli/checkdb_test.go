package cli_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/gen"
	"github.com/dagenhq/dagen/gen/gentest"
	"github.com/dagenhq/dagen/internal/analysis"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

var update = flag.Bool("update", false, "rewrite the golden files of dagen check -db")

// fixedRunID is run n of workflow w, the same at every test run so the
// golden output can show run ids.
func fixedRunID(w, n int) dag.RunID {
	var id dag.RunID
	id[6], id[8] = 0x70, 0x80 // version 7, RFC 4122 variant
	id[14], id[15] = byte(w), byte(n)
	return id
}

// TestCheckDB starts runs of a first build of package pub in a database,
// as its workers would (the tasks with that build's signatures, their
// descriptions recorded), then checks a second build against it: a step
// renamed without name=, a parent inserted, an output type changed and a
// step removed strand the runs; a rename that keeps name= and an added leaf
// do not.
func TestCheckDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a throwaway module")
	}
	ctx := t.Context()
	golden, err := filepath.Abs("testdata/deploy/check.golden")
	if err != nil {
		t.Fatal(err)
	}
	v1, err := os.ReadFile("testdata/deploy/v1.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	v2, err := os.ReadFile("testdata/deploy/v2.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := gentest.TempModule(t, map[string]string{"pub/pub.go": string(v1)})
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Chdir(filepath.Join(dir, "pub"))

	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 4)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, diags := analysis.Run(ctx, gen.Config{}, ".")
	if analysis.HasErrors(diags) || len(pkgs) != 1 {
		t.Fatalf("load the first build: %d packages, %v", len(pkgs), diags)
	}
	runs := map[string]int{"Post": 4} // more than the sample of three
	for w, wf := range pkgs[0].Workflows {
		def := gen.Skeleton(wf)
		infos := def.SignatureInfos()
		if err := st.RecordSignatures(ctx, infos); err != nil {
			t.Fatal(err)
		}
		var tasks []store.NewTask
		for _, si := range infos {
			nt := store.NewTask{Name: si.Step, Kind: si.Kind, MaxAttempts: 1, Signature: si.Signature}
			for _, p := range si.Parents {
				nt.Parents = append(nt.Parents, p.Name)
			}
			tasks = append(tasks, nt)
		}
		n := runs[wf.Name]
		if n == 0 {
			n = 2
		}
		var created []store.NewRun
		for i := range n {
			created = append(created, store.NewRun{ID: fixedRunID(w, i), Workflow: wf.Name, Fingerprint: def.Fingerprint(), Tenant: "t", Input: []byte(`{"ID":"x"}`), Tasks: tasks})
		}
		if err := st.CreateRuns(ctx, created); err != nil {
			t.Fatal(err)
		}
	}

	if err := os.WriteFile("pub.go", v2, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := dagen(t, "check", "-db", pgtest.URL(), "-schema", schema, ".")
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("dagen check -db: exit %d\nstdout:\n%sstderr:\n%s", code, out, errOut)
	}
	out = replaceSchema(out, schema)
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("dagen check -db printed:\n%s\nwant (%s; -update rewrites it):\n%s", out, golden, want)
	}

	if code, _, _ := dagen(t, "check", "-db", pgtest.URL(), "-schema", schema, "-strict", "."); code != cli.ExitFailure {
		t.Errorf("check -db -strict with stranded runs: exit %d, want %d", code, cli.ExitFailure)
	}

	code, out, errOut = dagen(t, "check", "-db", pgtest.URL(), "-schema", schema, "-json", ".")
	if code != cli.ExitOK {
		t.Fatalf("check -db -json: exit %d\n%s", code, errOut)
	}
	var rep struct {
		Runs      int `json:"runs"`
		Stranded  int `json:"stranded"`
		Workflows []struct {
			Workflow string `json:"workflow"`
			Stranded int    `json:"stranded"`
			Tasks    []struct {
				Step    string   `json:"step"`
				Reasons []string `json:"reasons"`
			} `json:"tasks"`
		} `json:"workflows"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check -db -json: %v\n%s", err, out)
	}
	// Post 4, Article, Report and Digest 2 each are stranded; Page and
	// Note's 2 each are not.
	if rep.Runs != 14 || rep.Stranded != 10 || len(rep.Workflows) != 4 {
		t.Errorf("check -db -json: %d runs, %d stranded, %d workflows; want 14, 10, 4\n%s", rep.Runs, rep.Stranded, len(rep.Workflows), out)
	}

	// Once the second build serves the first's steps again (the rename
	// undone), Post's runs are no longer stranded.
	if err := os.WriteFile("pub.go", v1, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = dagen(t, "check", "-db", pgtest.URL(), "-schema", schema, "-strict", ".")
	if code != cli.ExitOK || out != "schema "+schema+": this code can finish all 14 running runs\n" {
		t.Errorf("the first build against its own runs: exit %d\n%s", code, out)
	}
}

// replaceSchema puts a fixed name in place of the test's random schema.
func replaceSchema(s, schema string) string {
	return strings.ReplaceAll(s, schema, "dagen_test_SCHEMA")
}
