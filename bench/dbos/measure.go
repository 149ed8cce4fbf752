package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The measuring below is the same as in dagen's benchmark
// (examples/bench/measure.go), which this module cannot import.

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTicks = 100

// sampleEvery is how often the Postgres CPU sampler looks at /proc.
const sampleEvery = 200 * time.Millisecond

// window measures the resources a timed window used: this process's CPU,
// that of every process named postgres, and that of the backends serving
// DBOS (found by their application_name).
type window struct {
	rusage syscall.Rusage
	pg     *pgSampler
	pool   *pgxpool.Pool
	own    map[int]bool // pids of DBOS's backends
	cpu    cpuTimes     // the machine's, at the start
}

// usage is what a window measured.
type usage struct {
	workerCPU, pgCPU, pgOwnCPU float64 // core-seconds
	stealPct                   float64
}

// startWindow starts measuring; pool is used to find DBOS's backends.
func startWindow(ctx context.Context, pool *pgxpool.Pool) *window {
	w := &window{pg: startPGSampler(), pool: pool, own: map[int]bool{}, cpu: readCPUTimes()}
	w.addOwn(ctx)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &w.rusage)
	return w
}

// addOwn adds the pids of DBOS's backends (they carry its application
// name) to w.own. Errors leave the set as it is: the figure is then only
// lower.
func (w *window) addOwn(ctx context.Context) {
	rows, err := w.pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", appName)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			w.own[pid] = true
		}
	}
}

// stop ends the window and returns what it measured.
func (w *window) stop(ctx context.Context) usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	w.addOwn(ctx)
	pg, own := w.pg.stop(w.own)
	return usage{
		workerCPU: tv(ru.Utime) + tv(ru.Stime) - tv(w.rusage.Utime) - tv(w.rusage.Stime),
		pgCPU:     pg,
		pgOwnCPU:  own,
		stealPct:  readCPUTimes().stealPct(w.cpu),
	}
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

// resetPeakRSS resets VmHWM to the current RSS, so each workload reports
// its own peak. It does nothing where the kernel does not allow it.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMB returns this process's peak resident set size (VmHWM) in MiB
// from /proc/self/status; zero where that is unavailable.
func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || key != "VmHWM" {
			continue
		}
		fields := strings.Fields(val) // "48152 kB"
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0
		}
		return kb / 1024
	}
	return 0
}
