package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/runtime/dag"
)

// TestRunsRetry runs dagen runs retry on a seeded database.
func TestRunsRetry(t *testing.T) {
	t.Parallel()
	schema, ok, failed, sleeping := seedRuns(t)
	id := func(r dag.RunID) string { return r.String() }
	oneLine := func(what, errOut string, want ...string) {
		t.Helper()
		if strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: want one line:\n%s", what, errOut)
		}
		for _, w := range want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: want %q in:\n%s", what, w, errOut)
			}
		}
	}

	_, errOut := runsCmd(t, cli.ExitFailure, schema, "retry", id(sleeping))
	oneLine("a running run", errOut, "RUNNING", "only a finished run")
	_, errOut = runsCmd(t, cli.ExitFailure, schema, "retry", id(ok))
	oneLine("failed on a completed run", errOut, "COMPLETED", "from=STEP or all")
	_, errOut = runsCmd(t, cli.ExitFailure, schema, "retry", id(ok), "-mode", "from=nope")
	oneLine("unknown step", errOut, `no step "nope"`, "dagen runs show")
	_, errOut = runsCmd(t, cli.ExitError, schema, "retry", id(failed), "-mode", "bogus")
	oneLine("bad mode", errOut, "failed, failed+downstream, from=STEP or all")
	_, errOut = runsCmd(t, cli.ExitFailure, schema, "retry", dag.NewRunID().String())
	oneLine("unknown run", errOut, "no run")
	_, errOut = runsCmd(t, cli.ExitError, schema, "retry")
	oneLine("no id", errOut, "want one run id")

	out, _ := runsCmd(t, cli.ExitOK, schema, "retry", id(failed), "-operator", "alice")
	if !strings.Contains(out, "reset 1 step: pack") {
		t.Errorf("retry failed:\n%s", out)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "events", id(failed))
	if !strings.Contains(out, "RETRIED") || !strings.Contains(out, "retried by alice: failed") {
		t.Errorf("events after retry:\n%s", out)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "ls", "-workflow", "ship", "-status", "running")
	if !strings.Contains(out, id(failed)) {
		t.Errorf("the retried run is RUNNING:\n%s", out)
	}

	out, _ = runsCmd(t, cli.ExitOK, schema, "retry", id(ok), "-mode", "from=pack", "-operator", "bob", "-json")
	var res struct {
		Run, Mode, Operator string
		Reset, Enqueued     []string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("retry -json: %v\n%s", err, out)
	}
	if res.Run != id(ok) || res.Mode != "from=pack" || res.Operator != "bob" ||
		strings.Join(res.Reset, ",") != "pack" || strings.Join(res.Enqueued, ",") != "pack" {
		t.Errorf("retry -json:\n%s", out)
	}
}
