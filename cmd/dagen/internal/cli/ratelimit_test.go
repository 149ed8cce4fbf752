package cli_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestRunsShowSaysWhatAQueuedStepWaitsFor runs dagen runs show on runs
// whose step takes a rate limit's token: the run that took the bucket's
// only token is next in the fair queue, the other waits for the limit's
// next token, not in the fair queue; a queued step no live worker serves
// says so.
func TestRunsShowSaysWhatAQueuedStepWaitsFor(t *testing.T) {
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
	if err := e.Register(&engine.Definition{
		Name:       "pay",
		InputType:  "int",
		RateLimits: []engine.RateLimit{{Name: "stripe", Rate: 0.001, Burst: 1}},
		Steps: []engine.Step{{Name: "charge", OutputType: "string", RateLimit: &engine.StepRateLimit{Name: "stripe"},
			Run: func(context.Context, engine.StepInput) ([]byte, error) { return engine.Encode("ok") }}},
	}); err != nil {
		t.Fatal(err)
	}
	first, err := e.Trigger(ctx, "pay", "acme", 1)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.Trigger(ctx, "pay", "acme", 2)
	if err != nil {
		t.Fatal(err)
	}

	// No live worker serves the step yet.
	out, _ := runsCmd(t, cli.ExitOK, schema, "show", second.String())
	if !strings.Contains(out, "queued, but no live worker serves its signature") {
		t.Errorf("runs show with no worker:\n%s", out)
	}

	if _, err := st.FireTimers(ctx, 10); err != nil { // admits the first: the bucket held one token
		t.Fatal(err)
	}
	tasks, err := st.ListTasks(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Heartbeat(ctx, "busy", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Serve(ctx, "busy", store.Serving{Signatures: []string{tasks[0].Signature}}); err != nil {
		t.Fatal(err)
	}

	out, _ = runsCmd(t, cli.ExitOK, schema, "show", second.String())
	if !regexp.MustCompile(`(?m)^charge +- +QUEUED +0 +- +waiting for rate limit stripe: next token in \d+m\d+(\.\d+)?s$`).MatchString(out) {
		t.Errorf("runs show of the run waiting for a token:\n%s", out)
	}
	out, _ = runsCmd(t, cli.ExitOK, schema, "show", first.String())
	if !regexp.MustCompile(`(?m)^charge +- +QUEUED +0 +- +queued: next in the fair queue$`).MatchString(out) {
		t.Errorf("runs show of the run that took the token:\n%s", out)
	}

	out, _ = runsCmd(t, cli.ExitOK, schema, "show", second.String(), "-json")
	var res struct {
		Tasks []struct {
			Name  string
			Queue *struct {
				Ahead       int
				TenantAhead int    `json:"tenant_ahead"`
				RateLimited string `json:"rate_limited"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("runs show -json: %v\n%s", err, out)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].Queue == nil || !strings.HasPrefix(res.Tasks[0].Queue.RateLimited, "rate limit stripe: next token in ") ||
		res.Tasks[0].Queue.Ahead != 0 {
		t.Errorf("runs show -json: want the task's queue.rate_limited:\n%s", out)
	}
}
