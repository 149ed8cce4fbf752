package cli_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestThroughPgBouncer runs the commands an operator uses with only the URL
// of a PgBouncer in transaction mode: migrate, runs ls, cancel and show,
// and the console's page of a run.
func TestThroughPgBouncer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.StartPgBouncer(t, pgtest.PgBouncerOptions{DefaultPoolSize: 4}).URL(pgtest.Database(t))
	run := func(want int, args ...string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		code := cli.Main(ctx, append(args, "-db", url), &stdout, &stderr)
		require.Equal(t, want, code, "dagen %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
		return stdout.String()
	}
	run(cli.ExitOK, "migrate", "up")

	st, err := pgstore.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	e, err := engine.New(st, &engine.Config{Manual: true, WorkerID: "trigger"})
	require.NoError(t, err)
	require.NoError(t, e.Register(&engine.Definition{Name: "ship", Steps: []engine.Step{
		{Name: "pack", Run: func(context.Context, engine.StepInput) ([]byte, error) { return engine.Encode("packed") }},
	}}))
	id, err := e.Trigger(ctx, "ship", "acme", 0)
	require.NoError(t, err)

	require.Contains(t, run(cli.ExitOK, "runs", "ls"), id.String())
	run(cli.ExitOK, "runs", "cancel", id.String())
	require.Contains(t, run(cli.ExitOK, "runs", "show", id.String()), "CANCELLED")

	ui := startUI(t, "-db", url)
	resp, err := http.Get(ui + "runs/" + id.String())
	require.NoError(t, err)
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	require.Contains(t, string(page), id.String())
}
