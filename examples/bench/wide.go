package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dagenhq/dagen/bench/figures"
	"github.com/dagenhq/dagen/examples/bench/layered"
)

// wide10k: one run of a layered workflow of wideLayers layers of
// wideWidth steps (-scale multiplies the width: there is one run).
const (
	wideLayers = 40
	wideWidth  = 250
)

// dagenModule is this repository's module path: the throwaway module
// requires it, replaced by the repository's root.
const dagenModule = "github.com/dagenhq/dagen"

// wideModule is the throwaway module's path, and wideFlow the package
// that holds the workflow in it.
const (
	wideModule = "example.com/wide10k"
	wideFlow   = "flow"
)

// wide writes the layered workflow's annotated source into a throwaway
// module that uses this repository through a replace directive, and
// measures, one after the other: the dagen generator on it, go build of a
// program that holds the generated package, and that program's drain of
// one run on this benchmark's schema (steps/s and the program's peak RSS:
// the program is the worker). Building the generator and the packages the
// program imports comes first, untimed, so the build measures the
// workflow's own package and the link.
func (b *bench) wide(ctx context.Context, res *Result) error {
	shape := layered.Shape{Layers: wideLayers, Width: b.scaled(wideWidth)}
	root, err := repoRoot(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "dagen-wide10k-")
	if err != nil {
		return fmt.Errorf("make the throwaway module's directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := writeWideModule(dir, root, shape); err != nil {
		return err
	}
	// -mod=mod lets go.mod gain the requirements the replaced module
	// brings, at the versions the repository's go.mod names: the modules
	// its own build put in the module cache.
	env := append(os.Environ(), "GOFLAGS=-mod=mod")
	bin := filepath.Join(dir, "bin")
	if _, err := goCommand(ctx, dir, env, "build", "-o", filepath.Join(bin, "dagen"), dagenModule+"/cmd/dagen"); err != nil {
		return fmt.Errorf("build the dagen generator: %w", err)
	}
	if _, err := goCommand(ctx, dir, env, "build", dagenModule+"/examples/bench/layered"); err != nil {
		return fmt.Errorf("build the drain program's imports: %w", err)
	}

	t0 := time.Now()
	if out, err := runIn(ctx, dir, env, filepath.Join(bin, "dagen"), "./"+wideFlow); err != nil {
		return fmt.Errorf("generate the %d-step workflow: %w\n%s", shape.Steps(), err, out)
	}
	res.GenerateSec = figures.Round(time.Since(t0).Seconds(), 2)
	fi, err := os.Stat(filepath.Join(dir, wideFlow, "dag_gen.go"))
	if err != nil {
		return fmt.Errorf("the generator wrote no dag_gen.go: %w", err)
	}
	res.GeneratedKiB = int(fi.Size() / 1024)
	t0 = time.Now()
	if _, err := goCommand(ctx, dir, env, "build", "-o", filepath.Join(bin, "drain"), "."); err != nil {
		return fmt.Errorf("build the drain program: %w", err)
	}
	res.BuildSec = figures.Round(time.Since(t0).Seconds(), 2)

	c := layered.Config{
		DatabaseURL: b.o.databaseURL, Schema: b.o.schema, Pooler: b.o.pooler, SessionURL: b.sessionURL(),
		AppName: appName, PlanCacheMode: b.o.planCacheMode, MaxConns: b.o.maxConns,
		Concurrency: b.o.concurrency, BatchSize: b.o.batchSize, Poll: b.o.pollInterval,
		NoEagerContinue: b.o.noContinue, NotifyEvery: b.o.notifyEvery, PartitionPeriod: b.o.partitionPeriod,
		Tenant: benchTenant,
	}
	out, err := runIn(ctx, dir, nil, filepath.Join(bin, "drain"), c.Args()...)
	if err != nil {
		return fmt.Errorf("drain one run: %w\n%s", err, out)
	}
	var rep layered.Report
	if err := json.Unmarshal(lastLine(out), &rep); err != nil {
		return fmt.Errorf("read the drain's report: %w\n%s", err, out)
	}
	res.Runs, res.Steps, res.Layers, res.Width = 1, shape.Steps(), shape.Layers, shape.Width
	if rep.Status == "COMPLETED" {
		res.Completed = 1
	}
	if rep.Steps != shape.Steps() {
		return fmt.Errorf("the run has %d steps, want %d", rep.Steps, shape.Steps())
	}
	res.TriggerSeconds = figures.Round(rep.TriggerSeconds, 3)
	res.Seconds = figures.Round(rep.Seconds, 3)
	res.StepsPerSec = figures.Round(float64(res.Steps)/rep.Seconds, 0)
	res.TriggerRSSMB = figures.Round(rep.TriggerRSSMB, 1)
	res.RSSMB, res.RSSNowMB = figures.Round(rep.RSSMB, 1), figures.Round(rep.RSSNowMB, 1)
	res.WorkerCPUSec = figures.Round(rep.WorkerCPU, 2)
	res.WorkerGCCPUSec = figures.Round(rep.WorkerGCCPU, 2)
	res.PGCPUSec = figures.Round(rep.PGCPU, 2)
	res.PGOwnCPUSec = figures.Round(rep.PGOwnCPU, 2)
	res.StealPct = figures.Round(rep.StealPct, 1)
	if rep.Seconds > 0 {
		res.WorkerCPUPct = figures.Round(100*rep.WorkerCPU/rep.Seconds, 0)
		res.PGCPUPct = figures.Round(100*rep.PGCPU/rep.Seconds, 0)
		res.PGOwnCPUPct = figures.Round(100*rep.PGOwnCPU/rep.Seconds, 0)
	}
	return nil
}

// repoRoot returns the root of the dagen module the benchmark runs in:
// the module of the working directory (go env GOMOD), which make bench
// runs from.
func repoRoot(ctx context.Context) (string, error) {
	out, err := goCommand(ctx, "", nil, "env", "GOMOD")
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	b, err := os.ReadFile(mod)
	if mod == "" || mod == os.DevNull || err != nil || !strings.HasPrefix(string(b), "module "+dagenModule+"\n") {
		return "", fmt.Errorf("wide10k builds a program against this repository: run the benchmark from inside the %s module (make bench runs it from the root); go env GOMOD says %q", dagenModule, mod)
	}
	return filepath.Dir(mod), nil
}

// writeWideModule writes the throwaway module into dir: go.mod (requiring
// dagen, replaced by root), the repository's go.sum (so every module is
// checked as the repository's build checks it), the workflow's package and
// the drain program.
func writeWideModule(dir, root string, shape layered.Shape) error {
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return fmt.Errorf("read the repository's go.sum: %w", err)
	}
	files := map[string][]byte{
		"go.mod":                   fmt.Appendf(nil, "module %s\n\ngo 1.26.0\n\nrequire %s v0.0.0\n\nreplace %s => %s\n", wideModule, dagenModule, dagenModule, root),
		"go.sum":                   sum,
		"main.go":                  layered.Program(wideModule + "/" + wideFlow),
		wideFlow + "/" + "flow.go": layered.Source(wideFlow, shape),
	}
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("write the throwaway module: %w", err)
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return fmt.Errorf("write the throwaway module: %w", err)
		}
	}
	return nil
}

// goCommand runs the go command with args in dir (the working directory
// when empty) and env (the process's when nil), and returns its standard
// output; an error carries its standard error.
func goCommand(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	out, err := runIn(ctx, dir, env, "go", args...)
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// runIn runs name with args in dir and env (the process's when nil); it
// returns standard output, or on failure standard output and error
// together, for the message.
func runIn(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if cerr := context.Cause(ctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return append(stdout.Bytes(), stderr.Bytes()...), err
	}
	return stdout.Bytes(), nil
}

// lastLine returns the last non-empty line of out.
func lastLine(out []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			last = append(last[:0], l...)
		}
	}
	return last
}
