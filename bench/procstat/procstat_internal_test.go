package procstat

import (
	"context"
	"runtime"
	"testing"
)

func TestParseStat(t *testing.T) {
	line := "2201 (postgres: a (b)) S 2200 2201 2201 0 -1 4194368 1 0 0 0 53 128 0 0 20 0 1 0 777 2 3 4"
	k, ticks, ok := parseStat(line)
	if !ok || k.pid != 2201 || k.start != 777 || ticks != 181 {
		t.Errorf("parseStat = %+v %d %v", k, ticks, ok)
	}
	for _, bad := range []string{"", "x (y) S", "12 (y) S 1 2", "(y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if _, _, ok := parseStat(bad); ok {
			t.Errorf("parseStat(%q) ok", bad)
		}
	}
}

// TestWindowCountsGCCPU forces collections of a heap kept alive inside a
// window: the window reports GC CPU, and more than a window with no
// collection.
func TestWindowCountsGCCPU(t *testing.T) {
	none := func(context.Context) []int { return nil }
	quiet := Start(context.Background(), none).Stop(context.Background())

	w := Start(context.Background(), none)
	keep := make([][]byte, 0, 4096)
	for i := range 4096 {
		keep = append(keep, make([]byte, 4096+i%7))
	}
	for range 20 {
		runtime.GC()
	}
	runtime.KeepAlive(keep)
	u := w.Stop(context.Background())
	if u.WorkerGCCPU <= 0 {
		t.Fatalf("20 collections of a 16 MB heap: WorkerGCCPU = %v, want > 0", u.WorkerGCCPU)
	}
	if u.WorkerGCCPU <= quiet.WorkerGCCPU {
		t.Errorf("GC CPU with 20 collections %v, without any %v: want more with them", u.WorkerGCCPU, quiet.WorkerGCCPU)
	}
}
