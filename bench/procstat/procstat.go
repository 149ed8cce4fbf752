// Package procstat measures what a benchmark's timed window cost on this
// machine, from /proc: the CPU of this process, of every process named
// postgres and of the backends serving the benchmark (found by
// application_name), the CPU steal, and this process's resident set size.
// dagen's benchmark (examples/bench) and its peers (bench/river,
// bench/dbos, modules of their own) share it, so the three are measured
// alike. Everything is best effort: where /proc is missing (not Linux) the
// figures are zero.
package procstat

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTicks = 100

// sampleEvery is how often the Postgres CPU sampler looks at /proc.
const sampleEvery = 200 * time.Millisecond

// Usage is what a window measured: core-seconds of this process, of every
// postgres process and of the benchmark's own backends among them, and
// the share of the machine's CPU time its host gave to others (steal), in
// %.
//
// WorkerGCCPU is the part of WorkerCPU the Go runtime estimates it spent
// collecting garbage (runtime/metrics /cpu/classes/gc/total:cpu-seconds:
// marking, assists and pauses; the background sweep is not in it). Its
// idle-priority mark workers run whenever a P has nothing to do, so on a
// machine Postgres shares they take CPU Postgres could have had.
type Usage struct {
	WorkerCPU, PGCPU, PGOwnCPU float64
	WorkerGCCPU                float64
	StealPct                   float64
}

// Querier is what Backends needs of a pool or connection.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Backends returns a function that lists the pids of the backends whose
// application_name is app. Errors list none: the own figure is then only
// lower.
func Backends(q Querier, app string) func(context.Context) []int {
	return func(ctx context.Context) []int {
		rows, err := q.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
		if err != nil {
			return nil
		}
		defer rows.Close()
		var pids []int
		for rows.Next() {
			var pid int
			if rows.Scan(&pid) == nil {
				pids = append(pids, pid)
			}
		}
		return pids
	}
}

// Window measures the resources a timed window used.
type Window struct {
	rusage syscall.Rusage
	pg     *pgSampler
	own    map[int]bool // pids of the benchmark's backends
	backs  func(context.Context) []int
	cpu    cpuTimes // the machine's, at the start
	gc     float64  // this process's GC CPU, at the start
}

// Start starts measuring. own lists the benchmark's backends; it is asked
// at the start and at the end, so backends opened within are counted.
func Start(ctx context.Context, own func(context.Context) []int) *Window {
	w := &Window{pg: startPGSampler(), own: map[int]bool{}, backs: own, cpu: readCPUTimes()}
	w.addOwn(ctx)
	w.gc = gcCPU()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &w.rusage)
	return w
}

func (w *Window) addOwn(ctx context.Context) {
	for _, pid := range w.backs(ctx) {
		w.own[pid] = true
	}
}

// Stop ends the window and returns what it measured.
func (w *Window) Stop(ctx context.Context) Usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	gc := gcCPU()
	w.addOwn(ctx)
	pg, own := w.pg.stop(w.own)
	return Usage{
		WorkerCPU:   tv(ru.Utime) + tv(ru.Stime) - tv(w.rusage.Utime) - tv(w.rusage.Stime),
		PGCPU:       pg,
		PGOwnCPU:    own,
		WorkerGCCPU: max(gc-w.gc, 0),
		StealPct:    readCPUTimes().stealPct(w.cpu),
	}
}

// gcCPUMetric is the runtime's estimate of the CPU seconds its garbage
// collector has used since the process started.
const gcCPUMetric = "/cpu/classes/gc/total:cpu-seconds"

// gcCPU reads gcCPUMetric; 0 where the runtime does not have it.
func gcCPU() float64 {
	s := []metrics.Sample{{Name: gcCPUMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return s[0].Value.Float64()
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// cpuTimes are the machine's CPU times from the first line of /proc/stat,
// in ticks: all of them, and steal, the time a virtual machine's CPUs were
// ready to run but the host ran something else.
type cpuTimes struct{ total, steal uint64 }

func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return cpuTimes{}
	}
	var t cpuTimes
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		if i < 8 { // user nice system idle iowait irq softirq steal; guest is counted in user
			t.total += v
		}
		if i == 7 {
			t.steal = v
		}
	}
	return t
}

// stealPct is the share of the machine's CPU time stolen since start, in %.
func (t cpuTimes) stealPct(start cpuTimes) float64 {
	if t.total <= start.total {
		return 0
	}
	return 100 * float64(t.steal-start.steal) / float64(t.total-start.total)
}

// procKey tells processes apart even when a pid is reused.
type procKey struct {
	pid   int
	start uint64 // starttime, field 22 of /proc/<pid>/stat
}

// pgSampler sums the CPU time of processes named postgres over a window.
// Backends come and go, so it samples every sampleEvery and keeps the last
// figure of each process: a backend that exits loses at most one sample.
type pgSampler struct {
	base, last map[procKey]uint64
	done       chan struct{}
	wg         sync.WaitGroup
}

func startPGSampler() *pgSampler {
	s := &pgSampler{base: pgTicks(), last: map[procKey]uint64{}, done: make(chan struct{})}
	for k, v := range s.base {
		s.last[k] = v
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *pgSampler) sample() {
	for k, v := range pgTicks() {
		if _, ok := s.base[k]; !ok {
			s.base[k] = 0 // started within the window
		}
		s.last[k] = v
	}
}

// stop takes a last sample and returns the core-seconds used by all the
// processes, and by those whose pid is in own.
func (s *pgSampler) stop(own map[int]bool) (all, ofOwn float64) {
	close(s.done)
	s.wg.Wait()
	s.sample()
	var ticks, ownTicks uint64
	for k, v := range s.last {
		if b := s.base[k]; v > b {
			ticks += v - b
			if own[k.pid] {
				ownTicks += v - b
			}
		}
	}
	return float64(ticks) / clockTicks, float64(ownTicks) / clockTicks
}

// pgTicks returns utime+stime of every process named postgres.
func pgTicks() map[procKey]uint64 {
	out := map[procKey]uint64{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(d + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		k, ticks, ok := parseStat(string(stat))
		if ok {
			out[k] = ticks
		}
	}
	return out
}

// parseStat reads pid, starttime and utime+stime from a /proc/<pid>/stat
// line. The command name (field 2) is in parentheses and may hold spaces,
// so fields are counted from its closing parenthesis.
func parseStat(line string) (procKey, uint64, bool) {
	open, closing := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 1 || closing < open {
		return procKey{}, 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return procKey{}, 0, false
	}
	f := strings.Fields(line[closing+1:]) // f[0] is field 3
	if len(f) < 20 {
		return procKey{}, 0, false
	}
	utime, err1 := strconv.ParseUint(f[14-3], 10, 64)
	stime, err2 := strconv.ParseUint(f[15-3], 10, 64)
	start, err3 := strconv.ParseUint(f[22-3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procKey{}, 0, false
	}
	return procKey{pid: pid, start: start}, utime + stime, true
}

// ResetPeakRSS resets VmHWM to the current RSS, so each workload reports
// its own peak. It does nothing where the kernel does not allow it.
func ResetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// RSSMB returns this process's peak (VmHWM) and current (VmRSS) resident
// set size in MiB from /proc/self/status; zeros where that is unavailable.
func RSSMB() (peak, now float64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		fields := strings.Fields(val) // "48152 kB"
		if len(fields) == 0 {
			continue
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		if key == "VmHWM" {
			peak = kb / 1024
		} else {
			now = kb / 1024
		}
	}
	return peak, now
}
