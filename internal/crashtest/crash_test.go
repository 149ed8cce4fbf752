package crashtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/dagenhq/dagen/internal/crashtest/flow"
	"github.com/dagenhq/dagen/internal/pgtest"
	"github.com/dagenhq/dagen/runtime/dag"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
	"github.com/dagenhq/dagen/runtime/store/pgstore"
)

const execTable = `CREATE TABLE crash_exec (
	run_id  uuid NOT NULL,
	step    text NOT NULL,
	attempt int  NOT NULL,
	phase   text NOT NULL,
	pid     int  NOT NULL,
	worker  text NOT NULL,
	at      timestamptz NOT NULL DEFAULT clock_timestamp(),
	output  bigint -- an end's output, when the worker records it
)`

// workerDir holds the worker command buildWorker compiles; TestMain
// removes it once the tests are done.
var workerDir string

// TestMain runs the tests, then removes the compiled worker command: a
// test binary of its own, some 17 MB, left behind by every run before.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dagen-crashtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest:", err)
		os.Exit(1)
	}
	workerDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildWorker compiles the worker command once per test binary.
var buildWorker = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(workerDir, "worker")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/dagenhq/dagen/internal/crashtest/worker").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build worker: %v\n%s", err, out)
	}
	return bin, nil
})

// proc is one worker process.
type proc struct {
	id  string
	cmd *exec.Cmd
	log *bytes.Buffer
}

// cluster starts and kills worker processes for one test.
type cluster struct {
	t      *testing.T
	bin    string
	url    string
	args   []string
	mu     sync.Mutex
	procs  map[string]*proc
	killed map[int]bool // pids
	logs   []*proc
	seq    int
}

func newCluster(t *testing.T, url string, args ...string) *cluster {
	bin, err := buildWorker()
	require.NoError(t, err)
	c := &cluster{t: t, bin: bin, url: url, args: args, procs: map[string]*proc{}, killed: map[int]bool{}}
	t.Cleanup(func() {
		c.stopAll()
		if t.Failed() {
			for _, p := range c.logs {
				t.Logf("--- worker %s log:\n%s", p.id, tail(p.log.String(), 3000))
			}
		}
	})
	return c
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// start starts a worker in slot name, with a fresh worker id.
func (c *cluster) start(slot string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	id := fmt.Sprintf("%s-%d", slot, c.seq)
	log := &bytes.Buffer{}
	args := append([]string{"-url", c.url, "-id", id}, c.args...)
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(c.t, cmd.Start())
	p := &proc{id: id, cmd: cmd, log: log}
	c.procs[slot] = p
	c.logs = append(c.logs, p)
}

// kill SIGKILLs the worker in slot and waits for it to die.
func (c *cluster) kill(slot string) {
	c.mu.Lock()
	p := c.procs[slot]
	delete(c.procs, slot)
	if p != nil {
		c.killed[p.cmd.Process.Pid] = true
	}
	c.mu.Unlock()
	if p != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

func (c *cluster) stopAll() {
	c.mu.Lock()
	procs := c.procs
	c.procs = map[string]*proc{}
	c.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	}
}

func (c *cluster) wasKilled(pid int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.killed[pid]
}

// execution is one row of crash_exec.
type execution struct {
	step    string
	attempt int
	phase   string
	pid     int
	at      time.Time
}

func TestKilledWorkersLoseNothing(t *testing.T) {
	const runs = 300
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	schema := pgtest.Schema(t)
	pool := pgtest.Pool(t, schema, 8)
	require.NoError(t, pgstore.Migrate(ctx, pool))
	_, err := pool.Exec(ctx, execTable)
	require.NoError(t, err)
	st, err := pgstore.New(ctx, pool, nil)
	require.NoError(t, err)

	// Trigger every run up front from an engine that works nothing itself.
	trigger, err := engine.New(st, &engine.Config{Manual: true})
	require.NoError(t, err)
	wf, err := flow.NewJobWorkflow(trigger)
	require.NoError(t, err)
	ids := make([]dag.RunID, 0, runs)
	for i := range runs {
		run, err := wf.Start(ctx, fmt.Sprintf("tenant-%d", i%5), flow.Job{N: i, Work: 40 * time.Millisecond, Nap: 300 * time.Millisecond})
		require.NoError(t, err)
		ids = append(ids, run.ID())
	}

	c := newCluster(t, pgtest.SchemaURL(t, schema), "-lease", "1s")
	slots := []string{"w1", "w2", "w3"}
	for _, s := range slots {
		c.start(s)
	}
	kills := 0
	for !allFinished(ctx, t, st, ids) {
		select {
		case <-ctx.Done():
			t.Fatalf("runs did not finish: %v", ctx.Err())
		case <-time.After(time.Duration(700+rand.IntN(600)) * time.Millisecond):
		}
		slot := slots[rand.IntN(len(slots))]
		c.kill(slot)
		kills++
		c.start(slot)
	}
	c.stopAll()
	t.Logf("%d runs finished with %d workers killed", runs, kills)
	require.Positive(t, kills)

	execs := loadExecutions(ctx, t, pool)
	killedReruns := 0
	for _, id := range ids {
		killedReruns += audit(ctx, t, c, st, id, execs[id], true)
	}
	t.Logf("%d step executions were repeated because their worker was killed", killedReruns)
	require.Positive(t, killedReruns, "some kill landed on a running step, and its attempt ran again")
}

func allFinished(ctx context.Context, t *testing.T, st store.Store, ids []dag.RunID) bool {
	for _, id := range ids {
		run, err := st.GetRun(ctx, id)
		require.NoError(t, err)
		if !run.Status.Terminal() {
			return false
		}
	}
	return true
}

func loadExecutions(ctx context.Context, t *testing.T, pool *pgxpool.Pool) map[dag.RunID][]execution {
	rows, err := pool.Query(ctx, `SELECT run_id, step, attempt, phase, pid, at FROM crash_exec ORDER BY at`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[dag.RunID][]execution{}
	for rows.Next() {
		var id [16]byte
		var e execution
		require.NoError(t, rows.Scan(&id, &e.step, &e.attempt, &e.phase, &e.pid, &e.at))
		out[dag.RunID(id)] = append(out[dag.RunID(id)], e)
	}
	require.NoError(t, rows.Err())
	return out
}

// audit checks one run: completed, every task completed exactly once in the
// store, the fan-in after all its parents, and, when strict, every repeated
// execution explained by a killed worker or by the one attempt the flaky
// step is meant to fail. It returns how many executions were repeated
// because their worker was killed.
func audit(ctx context.Context, t *testing.T, c *cluster, st store.Store, id dag.RunID, execs []execution, strict bool) int {
	run, err := st.GetRun(ctx, id)
	require.NoError(t, err)
	require.Equal(t, store.RunCompleted, run.Status, "run %s", id)
	job, err := engine.Input[flow.Job](engine.StepInput{Input: run.Input})
	require.NoError(t, err)

	tasks, err := st.ListTasks(ctx, id)
	require.NoError(t, err)
	final := map[string]int{}
	for _, tk := range tasks {
		require.Equal(t, store.TaskCompleted, tk.Status, "run %s task %s", id, tk.Name)
		final[tk.Name] = tk.Attempt
	}
	events, err := st.ListEvents(ctx, id)
	require.NoError(t, err)
	completed := map[string]int{}
	for _, ev := range events {
		if ev.Type == store.EventCompleted {
			completed[ev.Step]++
		}
	}
	for name := range final {
		require.Equal(t, 1, completed[name], "run %s: task %s completed %d times in the store", id, name, completed[name])
	}

	type key struct {
		step    string
		attempt int
	}
	starts := map[key]execution{}
	ends := map[key]execution{}
	for _, e := range execs {
		k := key{e.step, e.attempt}
		switch e.phase {
		case "start":
			_, dup := starts[k]
			require.False(t, dup, "run %s: %s attempt %d started twice", id, e.step, e.attempt)
			starts[k] = e
		default:
			ends[k] = e
		}
	}
	killedReruns := 0
	for k, s := range starts {
		if k.attempt == final[k.step] {
			end, ok := ends[k]
			require.True(t, ok, "run %s: the completed attempt %d of %s has no end", id, k.attempt, k.step)
			require.Equal(t, "end", end.phase)
			continue
		}
		// An earlier attempt: its worker was killed, or it is the flaky
		// step's first attempt, which fails on purpose for every third job.
		killed := c.wasKilled(s.pid)
		if killed {
			killedReruns++
		}
		flaky := k.step == "Flaky" && k.attempt == 1 && job.N%3 == 0 && ends[k].phase == "fail"
		require.True(t, killed || flaky || !strict,
			"run %s: %s attempt %d (phase %q) re-ran although worker pid %d was not killed and it was not the flaky step's planned failure",
			id, k.step, k.attempt, ends[k].phase, s.pid)
	}
	for _, parent := range []string{"FanA", "FanB", "FanC", "FanD"} {
		parentEnd := ends[key{parent, final[parent]}].at
		for k, s := range starts {
			if k.step == "Join" {
				require.False(t, s.at.Before(parentEnd), "run %s: Join attempt %d started before %s ended", id, k.attempt, parent)
			}
		}
	}
	return killedReruns
}
