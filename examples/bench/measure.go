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
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTicks = 100

// sampleEvery is how often the Postgres CPU sampler looks at /proc.
const sampleEvery = 200 * time.Millisecond

// window measures the resources a timed window used: this process's CPU,
// that of every process named postgres, and that of the backends serving
// this benchmark's pool.
type window struct {
	rusage syscall.Rusage
	pg     *pgSampler
	waits  *waitSampler
	b      *bench
	own    map[int]bool // pids of our backends
	cpu    cpuTimes     // the machine's, at the start
}

func (b *bench) startWindow(ctx context.Context) *window {
	w := &window{pg: startPGSampler(), waits: b.startWaits(ctx), b: b, own: map[int]bool{}, cpu: readCPUTimes()}
	w.addOwn(ctx)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &w.rusage)
	return w
}

// addOwn adds the pids of the backends of this benchmark's pool (they
// carry its application_name) to w.own. Errors leave the set as it is: the
// figure is then only lower.
func (w *window) addOwn(ctx context.Context) {
	rows, err := w.b.pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", appName)
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

// stop ends the window and writes its figures to res; wall is the timed
// window's length.
func (w *window) stop(ctx context.Context, res *Result, wall time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	w.addOwn(ctx)
	pg, own := w.pg.stop(w.own)
	if active, notify := w.waits.stop(); active > 0 {
		res.NotifyWaitPct = round(100*float64(notify)/float64(active), 1)
	}
	res.StealPct = round(readCPUTimes().stealPct(w.cpu), 1)
	sec := wall.Seconds()
	res.Seconds = round(sec, 3)
	cpu := tv(ru.Utime) + tv(ru.Stime) - tv(w.rusage.Utime) - tv(w.rusage.Stime)
	res.WorkerCPUSec = round(cpu, 2)
	res.PGCPUSec = round(pg, 2)
	res.PGOwnCPUSec = round(own, 2)
	if sec > 0 {
		res.WorkerCPUPct = round(100*cpu/sec, 0)
		res.PGCPUPct = round(100*pg/sec, 0)
		res.PGOwnCPUPct = round(100*own/sec, 0)
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

// rssMB returns this process's peak (VmHWM) and current (VmRSS) resident
// set size in MiB from /proc/self/status; zeros where that is unavailable.
func rssMB() (peak, now float64) {
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
			peak = round(kb/1024, 1)
		} else {
			now = round(kb/1024, 1)
		}
	}
	return peak, now
}

// waitEvery is how often the wait sampler looks at pg_stat_activity.
const waitEvery = 20 * time.Millisecond

// waitSampler counts, every waitEvery, the active backends of the database
// (but its own) and those of them waiting for the lock a notifying
// transaction takes at commit (a heavyweight lock on an object: the
// database's NOTIFY queue lock is the one such lock the engine takes).
type waitSampler struct {
	stopc          chan struct{}
	done           chan struct{}
	active, notify int
}

func (b *bench) startWaits(ctx context.Context) *waitSampler {
	w := &waitSampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(waitEvery)
		defer t.Stop()
		for {
			select {
			case <-w.stopc:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var active, notify int
			err := b.pool.QueryRow(ctx, `
				SELECT count(*) FILTER (WHERE state = 'active'),
				       count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock' AND wait_event = 'object')
				FROM pg_stat_activity
				WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&active, &notify)
			if err == nil {
				w.active += active
				w.notify += notify
			}
		}
	}()
	return w
}

// stop ends the sampling and returns the active backends and the waiting
// ones it counted.
func (w *waitSampler) stop() (active, notify int) {
	close(w.stopc)
	<-w.done
	return w.active, w.notify
}
