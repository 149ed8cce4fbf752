package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestRunsSignalAndSchedules sends signals with dagen runs signal (held,
// delivered, refused) and lists, pauses, resumes and deletes schedules
// with dagen schedules, on a schema seeded by a manual engine.
func TestRunsSignalAndSchedules(t *testing.T) {
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
	echo := func(_ context.Context, in engine.StepInput) ([]byte, error) { return engine.Encode("ok") }
	def := &engine.Definition{Name: "expense", InputType: "int", Steps: []engine.Step{
		{Name: "submit", OutputType: "string", Run: echo},
		{Name: "Approval", Kind: engine.KindSignal, OutputType: "Approval", Parents: []engine.Parent{{Name: "submit"}}, SignalTimeout: time.Hour},
		{Name: "pay", OutputType: "string", Parents: []engine.Parent{{Name: "Approval"}}, Run: echo},
	}, Schedules: []engine.ScheduleDef{{Name: "nightly", Cron: "0 3 * * *", Tenant: "finance", Input: func(context.Context, time.Time) ([]byte, error) { return engine.Encode(1) }}}}
	if err := e.Register(def); err != nil {
		t.Fatal(err)
	}
	waiting, err := e.Trigger(ctx, "expense", "acme", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Poll(ctx); err != nil { // registers the schedule, runs submit: the wait begins
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := runsCmd(t, cli.ExitOK, schema, "show", waiting.String())
	if !strings.Contains(out, "waiting for its signal (dagen runs signal "+waiting.String()+" Approval JSON) until ") {
		t.Errorf("show of a waiting run: %q", out)
	}
	early, err := e.Trigger(ctx, "expense", "acme", 2)
	if err != nil {
		t.Fatal(err)
	}

	out, _ = runsCmd(t, cli.ExitOK, schema, "signal", early.String(), "Approval", `{"By":"ann"}`)
	if !strings.Contains(out, "held: the run uses it when it reaches the wait") {
		t.Errorf("early signal: %q", out)
	}
	_, errOut := runsCmd(t, cli.ExitFailure, schema, "signal", early.String(), "Approval", `{"By":"bob"}`)
	if !strings.Contains(errOut, "is held already") {
		t.Errorf("second early signal: %q", errOut)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "signal", waiting.String(), "Approval", `{"By":"ann"}`, "-json")
	if !strings.Contains(out, `"delivered": true`) {
		t.Errorf("signal during the wait: %q", out)
	}
	_, errOut = runsCmd(t, cli.ExitFailure, schema, "signal", waiting.String(), "Approval", `{"By":"ann"}`)
	if !strings.Contains(errOut, "is resolved already") {
		t.Errorf("signal of a resolved wait: %q", errOut)
	}
	_, errOut = runsCmd(t, cli.ExitFailure, schema, "signal", waiting.String(), "Aproval", `{}`)
	if !strings.Contains(errOut, "did you mean Approval?") {
		t.Errorf("misspelled wait: %q", errOut)
	}
	_, errOut = runsCmd(t, cli.ExitError, schema, "signal", waiting.String(), "Approval", `{By:ann}`)
	if !strings.Contains(errOut, "the payload is not JSON") {
		t.Errorf("bad JSON: %q", errOut)
	}
	_, errOut = runsCmd(t, cli.ExitError, schema, "signal", waiting.String())
	if !strings.Contains(errOut, "want a run id, the wait's step name and the payload") {
		t.Errorf("missing arguments: %q", errOut)
	}
	for range 4 {
		if _, err := e.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []dag.RunID{waiting, early} {
		run, err := st.GetRun(ctx, id)
		if err != nil || run.Status != store.RunCompleted {
			t.Errorf("run %s: %v %v, want COMPLETED", id, run.Status, err)
		}
	}

	out, _ = runsCmd(t, cli.ExitOK, schema, "schedules")
	for _, want := range []string{"expense", "finance", "nightly", "0 3 * * *", "UTC", "latest", "active (declared)"} {
		if !strings.Contains(out, want) {
			t.Errorf("schedules lacks %q:\n%s", want, out)
		}
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "schedules", "pause", "nightly")
	if !strings.Contains(out, "paused: schedule nightly of expense for finance") {
		t.Errorf("pause: %q", out)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "schedules", "-json")
	if !strings.Contains(out, `"paused": true`) {
		t.Errorf("paused schedule: %q", out)
	}
	runsCmd(t, cli.ExitOK, schema, "schedules", "resume", "nightly")
	_, errOut = runsCmd(t, cli.ExitFailure, schema, "schedules", "pause", "nightyl")
	if !strings.Contains(errOut, "did you mean nightly?") {
		t.Errorf("misspelled schedule: %q", errOut)
	}
	_, errOut = runsCmd(t, cli.ExitError, schema, "schedules", "stop", "nightly")
	if !strings.Contains(errOut, "did you mean") && !strings.Contains(errOut, "want ls, pause, resume, delete") {
		t.Errorf("unknown subcommand: %q", errOut)
	}
	_, errOut = runsCmd(t, cli.ExitOK, schema, "schedules", "delete", "nightly")
	if !strings.Contains(errOut, "comes back when a worker registers its workflow") {
		t.Errorf("deleting a declared schedule warns: %q", errOut)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "schedules")
	if !strings.Contains(out, "no schedules") {
		t.Errorf("after delete: %q", out)
	}
}
