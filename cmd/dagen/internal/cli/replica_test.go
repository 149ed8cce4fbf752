package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dagenhq/dagen/cmd/dagen/internal/cli"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

// TestRunsOnAReplica runs dagen runs, schedules and tenants with -replica-db (and
// DAGEN_REPLICA_URL) on a real streaming standby that applies each commit
// late (recovery_min_apply_delay): listings read the standby and say so, a
// cancel waits for the standby to replay it so that the next dagen command
// shows it, says
// when the standby does not (replay paused), and a replica that is down
// leaves reads to the primary with a note.
func TestRunsOnAReplica(t *testing.T) {
	ctx := context.Background()
	primary := pgtest.NewPrimary(t, pgtest.ClusterOptions{})
	standby := primary.NewStandby(t, pgtest.ClusterOptions{Settings: map[string]string{"recovery_min_apply_delay": "'300ms'"}})
	pool, err := pgxpool.New(ctx, primary.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	newRun := func() string {
		t.Helper()
		r := store.NewRun{ID: dag.NewRunID(), Workflow: "ship", Fingerprint: "fp", Tenant: "acme", Input: []byte(`{}`),
			Tasks: []store.NewTask{{Name: "pick", Kind: store.KindStep, Signature: "ship.pick", MaxAttempts: 3}}}
		if err := st.CreateRuns(ctx, []store.NewRun{r}); err != nil {
			t.Fatal(err)
		}
		primary.WaitReplayed(t, standby)
		return r.ID.String()
	}
	run := func(want int, replica string, args ...string) (string, string) {
		t.Helper()
		args = append(args, "-db", primary.URL("postgres"))
		if replica != "" {
			args = append(args, "-replica-db", replica)
		}
		code, out, errOut := dagen(t, args...)
		if code != want {
			t.Fatalf("dagen %s: exit %d, want %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}
	lastLine := func(out string) string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	replica := standby.URL("postgres")

	id := newRun()
	out, _ := run(cli.ExitOK, replica, "runs", "ls")
	if !strings.Contains(out, id) || lastLine(out) != "replica: up to date" {
		t.Errorf("runs ls with a replica:\n%s", out)
	}
	out, errOut := run(cli.ExitOK, replica, "runs", "ls", "-json")
	if !json.Valid([]byte(out)) || errOut != "dagen runs ls: replica: up to date\n" {
		t.Errorf("runs ls -json with a replica: the lag goes to stderr, the JSON stays valid\nstdout:\n%sstderr:\n%s", out, errOut)
	}
	out, _ = run(cli.ExitOK, replica, "schedules")
	if lastLine(out) != "replica: up to date" {
		t.Errorf("schedules with a replica:\n%s", out)
	}
	t.Setenv("DAGEN_REPLICA_URL", replica)
	out, _ = run(cli.ExitOK, "", "runs", "show", id)
	if !strings.Contains(out, "RUNNING") || lastLine(out) != "replica: up to date" {
		t.Errorf("runs show with DAGEN_REPLICA_URL:\n%s", out)
	}

	// The cancel waits for the standby: the next command, reading the
	// standby, shows it.
	out, errOut = run(cli.ExitOK, "", "runs", "cancel", id)
	if out != "cancelled 1 run\n" || errOut != "" {
		t.Errorf("runs cancel:\nstdout:\n%sstderr:\n%s", out, errOut)
	}
	out, _ = run(cli.ExitOK, "", "runs", "show", id)
	if !strings.Contains(out, "tenant acme: CANCELLED") || lastLine(out) != "replica: up to date" {
		t.Errorf("runs show after the cancel, from the replica:\n%s", out)
	}

	// A tenant weight is set on the primary, like a cancel, and waits for
	// the standby: the next listing, reading the standby, shows it.
	out, errOut = run(cli.ExitOK, "", "tenants", "weight", "acme", "3")
	if out != "tenant acme: weight 3\n" || errOut != "" {
		t.Errorf("tenants weight with a replica:\nstdout:\n%sstderr:\n%s", out, errOut)
	}
	out, _ = run(cli.ExitOK, "", "tenants")
	if !regexp.MustCompile(`(?m)^acme +3$`).MatchString(out) || lastLine(out) != "replica: up to date" {
		t.Errorf("tenants after the weight, from the replica:\n%s", out)
	}

	// Replay paused: the cancel says the replica does not show it yet,
	// and listings show the lag.
	id = newRun()
	standby.Exec(t, "SELECT pg_wal_replay_pause()")
	_, errOut = run(cli.ExitOK, "", "runs", "cancel", id)
	if !strings.HasPrefix(errOut, "dagen runs cancel: done on the primary, but the replica has not replayed it yet, ") ||
		!strings.HasSuffix(errOut, " of WAL): reads from the replica may not show it for a while\n") {
		t.Errorf("runs cancel with replay paused: stderr:\n%s", errOut)
	}
	out, _ = run(cli.ExitOK, "", "runs", "ls", "-status", "running")
	if !strings.Contains(out, id) || !strings.HasPrefix(lastLine(out), "replica: ") || !strings.Contains(lastLine(out), " behind (") {
		t.Errorf("runs ls with replay paused: the replica's lag shows, and what it has replayed:\n%s", out)
	}
	standby.Exec(t, "SELECT pg_wal_replay_resume()")

	// A replica that is down: reads go to the primary, and say so.
	out, _ = run(cli.ExitOK, "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", "runs", "ls")
	if !strings.Contains(out, id) || !strings.HasPrefix(lastLine(out), "reading from the primary: the replica failed (") {
		t.Errorf("runs ls with the replica down:\n%s", out)
	}
	// dagen ui: the pages say where they read from.
	ui := startUI(t, "-db", primary.URL("postgres"), "-replica-db", replica)
	resp, err := http.Get(ui)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `id="source">replica: `) || !strings.Contains(string(b), id) {
		t.Errorf("dagen ui -replica-db: the runs page does not say it reads the replica:\n%s", b)
	}

	// Without a replica, no line.
	t.Setenv("DAGEN_REPLICA_URL", "")
	out, _ = run(cli.ExitOK, "", "runs", "ls")
	if strings.Contains(out, "replica") {
		t.Errorf("runs ls without a replica:\n%s", out)
	}
}

// startUI runs dagen ui with args on a free port until the test ends and
// returns its address.
func startUI(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, append([]string{"ui", "-addr", "127.0.0.1:0"}, args...), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	re := regexp.MustCompile(`on (http://\S+/)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("dagen ui exited %d:\n%s", code, stderr.String())
		default:
		}
	}
	t.Fatalf("dagen ui did not start:\n%s%s", stdout.String(), stderr.String())
	return ""
}

// lockedBuffer is a bytes.Buffer that a command writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
