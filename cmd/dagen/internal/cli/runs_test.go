package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// seedRuns makes, in a schema of its own, a completed and a failed run of
// workflow ship (tenant acme) and a sleeping run of workflow hold (tenant
// zeta), created in that order, and returns the schema and the run ids.
func seedRuns(t *testing.T) (schema string, ok, failed, sleeping dag.RunID) {
	t.Helper()
	ctx := context.Background()
	schema = pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 4)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(st, &engine.Config{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	step := func(name string, parents ...string) engine.Step {
		s := engine.Step{Name: name, OutputType: "string", Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
			n, err := engine.Input[int](in)
			if err != nil {
				return nil, err
			}
			if name == "pack" && n == 2 {
				return nil, dag.Terminal(errors.New("boom: out of boxes"))
			}
			return engine.Encode(name)
		}}
		for _, p := range parents {
			s.Parents = append(s.Parents, engine.Parent{Name: p})
		}
		return s
	}
	for _, def := range []*engine.Definition{
		{Name: "ship", InputType: "int", Steps: []engine.Step{step("pick"), step("pack", "pick")}},
		{Name: "hold", InputType: "int", Steps: []engine.Step{
			{Name: "nap", Kind: engine.KindSleep, Sleep: func(context.Context, engine.StepInput) (engine.Wake, error) {
				return engine.Wake{Delay: time.Hour}, nil
			}},
			step("wake", "nap"),
		}},
	} {
		if err := e.Register(def); err != nil {
			t.Fatal(err)
		}
	}
	run := func(workflow, tenant string, n int) dag.RunID {
		t.Helper()
		id, err := e.Trigger(ctx, workflow, tenant, n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = e.Wait(ctx, id)           // FAILED and blocked runs are fine
		time.Sleep(2 * time.Millisecond) // distinct creation times
		return id
	}
	return schema, run("ship", "acme", 1), run("ship", "acme", 2), run("hold", "zeta", 3)
}

func runsCmd(t *testing.T, want int, schema string, args ...string) (string, string) {
	t.Helper()
	args = append(append([]string{"runs"}, args...), "-db", pgtest.URL(), "-schema", schema)
	code, out, errOut := dagen(t, args...)
	if code != want {
		t.Fatalf("dagen %s: exit %d, want %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out, errOut
}

// TestRunsCommands runs dagen runs ls, show, events and cancel on a seeded
// database.
func TestRunsCommands(t *testing.T) {
	t.Parallel()
	schema, ok, failed, sleeping := seedRuns(t)
	id := func(r dag.RunID) string { return r.String() }

	out, _ := runsCmd(t, cli.ExitOK, schema, "ls")
	wantLines(t, out,
		`ID +WORKFLOW +TENANT +STATUS +AGE +DURATION +FAILED STEP`,
		id(sleeping)+` +hold +zeta +RUNNING +\S+ +- *`,
		id(failed)+` +ship +acme +FAILED +\S+ +\S+ +pack`,
		id(ok)+` +ship +acme +COMPLETED +\S+ +\S+ *`,
		``,
		`1 running, 1 completed, 1 failed`,
	)

	out, _ = runsCmd(t, cli.ExitOK, schema, "ls", "-status", "failed,cancelled", "-workflow", "ship")
	wantLines(t, out,
		`ID +WORKFLOW +TENANT +STATUS +AGE +DURATION +FAILED STEP`,
		id(failed)+` +ship +acme +FAILED +\S+ +\S+ +pack`,
		``,
		`1 failed`,
	)

	// Pages: two, then the rest after the cursor.
	out, _ = runsCmd(t, cli.ExitOK, schema, "ls", "-limit", "2")
	if !strings.Contains(out, "more: add -after "+id(failed)) || strings.Contains(out, id(ok)) {
		t.Errorf("first page of two:\n%s", out)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "ls", "-limit", "2", "-after", id(failed))
	if !strings.Contains(out, id(ok)) || strings.Contains(out, id(failed)) || strings.Contains(out, "more:") {
		t.Errorf("second page:\n%s", out)
	}

	out, _ = runsCmd(t, cli.ExitOK, schema, "ls", "-json", "-tenant", "acme")
	var page struct {
		Runs []struct {
			ID, Status string
			Failure    *dag.Failure
		} `json:"runs"`
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		t.Fatalf("ls -json: %v\n%s", err, out)
	}
	if len(page.Runs) != 2 || page.Runs[0].ID != id(failed) || page.Runs[0].Failure == nil || page.Runs[0].Failure.Step != "pack" ||
		page.Counts["FAILED"] != 1 || page.Counts["COMPLETED"] != 1 {
		t.Errorf("ls -json -tenant acme:\n%s", out)
	}

	out, _ = runsCmd(t, cli.ExitOK, schema, "show", id(failed))
	for _, want := range []string{"workflow ship, tenant acme: FAILED", "failed: step pack, attempt 1: boom: out of boxes"} {
		if !strings.Contains(out, want) {
			t.Errorf("show: no %q in\n%s", want, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	wantLines(t, strings.Join(lines[len(lines)-3:], "\n")+"\n",
		`STEP +AFTER +STATUS +ATTEMPTS +DURATION +ERROR OR REASON`,
		`pick +- +COMPLETED +1 +\S+ *`,
		`pack +pick +FAILED +1 +\S+ +boom: out of boxes`,
	)
	out, _ = runsCmd(t, cli.ExitOK, schema, "show", "-graph", id(failed))
	for _, want := range []string{"flowchart TD", `t0["pick · completed"]:::completed`, `t1["pack · failed"]:::failed`, "t0 --> t1", "classDef failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("show -graph: no %q in\n%s", want, out)
		}
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "events", id(failed))
	if !strings.Contains(out, "pack  FAILED") && !strings.Contains(out, "FAILED") {
		t.Errorf("events:\n%s", out)
	}

	// Errors say what to do.
	_, errOut := runsCmd(t, cli.ExitFailure, schema, "show", dag.NewRunID().String())
	if !strings.Contains(errOut, "no run") || !strings.Contains(errOut, "dagen runs ls") {
		t.Errorf("unknown id: %s", errOut)
	}
	_, errOut = runsCmd(t, cli.ExitError, schema, "show", "nope")
	if !strings.Contains(errOut, "is not a run id") {
		t.Errorf("bad id: %s", errOut)
	}
	_, errOut = runsCmd(t, cli.ExitError, schema, "ls", "-status", "bogus")
	if !strings.Contains(errOut, `unknown status "bogus"`) {
		t.Errorf("bad status: %s", errOut)
	}
	_, errOut = runsCmd(t, cli.ExitError, schema, "cancel", "-filter")
	if !strings.Contains(errOut, "no filter given") {
		t.Errorf("cancel -filter without a filter: %s", errOut)
	}

	out, _ = runsCmd(t, cli.ExitOK, schema, "cancel", "-filter", "-tenant", "zeta", "-yes")
	if out != "cancelled 1 run\n" {
		t.Errorf("cancel -filter: %q", out)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "ls", "-status", "cancelled", "-json")
	if !strings.Contains(out, id(sleeping)) {
		t.Errorf("the sleeping run is not CANCELLED:\n%s", out)
	}
	_, errOut = runsCmd(t, cli.ExitOK, schema, "cancel", id(ok))
	if !strings.Contains(errOut, "had finished") {
		t.Errorf("cancel of a finished run: %s", errOut)
	}

}

// TestRunsShowMapped shows a run whose mapped step failed on one element:
// the step's row counts its elements, the elements that did not complete
// are listed (a few), and the graph draws the step as one node.
func TestRunsShowMapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 4)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(st, &engine.Config{Manual: true, BatchSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	def := &engine.Definition{Name: "fan", InputType: "int", Steps: []engine.Step{
		{Name: "list", OutputType: "[]int", Run: func(context.Context, engine.StepInput) ([]byte, error) {
			out := make([]int, 30)
			for i := range out {
				out[i] = i
			}
			return engine.Encode(out)
		}},
		{Name: "each", Parents: []engine.Parent{{Name: "list"}}, Each: "list", OutputType: "int",
			Run: func(_ context.Context, in engine.StepInput) ([]byte, error) {
				v, err := engine.ParentOutput[int](in, "list")
				if err != nil {
					return nil, err
				}
				if v == 3 {
					return nil, dag.Terminal(errors.New("element three is bad"))
				}
				return engine.Encode(v)
			}},
	}}
	if err := e.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := e.Trigger(ctx, "fan", "acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, id); !errors.Is(err, engine.ErrRunFailed) {
		t.Fatalf("wait: %v", err)
	}

	out, _ := runsCmd(t, cli.ExitOK, schema, "show", id.String())
	for _, re := range []string{
		`failed: step each\[3\], attempt 1: element three is bad`,
		`(?m)^each +list +CANCELLED \(\d+ of 30 elements done\) +1 `,
		`(?m)^  each\[3\] +- +FAILED +1 +\S+ +element three is bad`,
		`(?m)^  … +\d+ more elements not completed: dagen runs show -json lists them all`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("show: no %s in\n%s", re, out)
		}
	}
	if n := strings.Count(out, "\n  each["); n != 10 {
		t.Errorf("show lists %d elements, want 10:\n%s", n, out)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "show", "-graph", id.String())
	if !regexp.MustCompile(`t1\["each \(each: \d+ of 30\) · cancelled"\]`).MatchString(out) || strings.Contains(out, "each[") {
		t.Errorf("show -graph draws the mapped step as one node:\n%s", out)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "show", "-json", id.String())
	if strings.Count(out, `"element":`) != 30 || !strings.Contains(out, `"elements": 30`) {
		t.Errorf("show -json lists every element:\n%.2000s", out)
	}
}

// TestRunsQueuedAndTimedOut: a run waiting for its concurrency cap is
// listed by -status queued and shown with its key and deadline; a run
// that timed out is shown with the timeout as its failure.
func TestRunsQueuedAndTimedOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 4)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(st, &engine.Config{Manual: true})
	if err != nil {
		t.Fatal(err)
	}
	def := &engine.Definition{Name: "capped", InputType: "int", Concurrency: 1, Timeout: 48 * time.Hour,
		ConcurrencyKey: func([]byte) (string, error) { return "c1", nil },
		Steps:          []engine.Step{{Name: "a", Run: func(context.Context, engine.StepInput) ([]byte, error) { return nil, nil }}}}
	if err := e.Register(def); err != nil {
		t.Fatal(err)
	}
	first, err := e.Trigger(ctx, "capped", "acme", 1)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.Trigger(ctx, "capped", "acme", 2, engine.WithTimeout(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}

	out, _ := runsCmd(t, cli.ExitOK, schema, "ls", "-status", "queued")
	if !strings.Contains(out, second.String()) || strings.Contains(out, first.String()) {
		t.Errorf("ls -status queued lists the queued run alone:\n%s", out)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "show", second.String())
	for _, want := range []string{"capped, tenant acme: QUEUED", `queued: waiting for its workflow's concurrency cap (key "c1") to admit it`, "deadline "} {
		if !strings.Contains(out, want) {
			t.Errorf("show: no %q in\n%s", want, out)
		}
	}

	time.Sleep(5 * time.Millisecond) // past the second run's deadline
	if _, err := st.FireTimers(ctx, 10); err != nil {
		t.Fatal(err)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "show", second.String())
	for _, want := range []string{"capped, tenant acme: FAILED", "failed: timed out after 1ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("show: no %q in\n%s", want, out)
		}
	}
}
