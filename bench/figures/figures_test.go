package figures

import (
	"testing"
	"time"
)

func TestPercentiles(t *testing.T) {
	if p50, p99 := Percentiles(nil); p50 != 0 || p99 != 0 {
		t.Errorf("Percentiles(nil) = %v, %v, want zeros", p50, p99)
	}
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i) // 100 down to 1
	}
	if p50, p99 := Percentiles(xs); p50 != 50 || p99 != 99 {
		t.Errorf("Percentiles(1..100) = %v, %v, want 50, 99", p50, p99)
	}
	if xs[0] != 100 {
		t.Error("Percentiles sorted its argument")
	}
	if p50, p99 := Percentiles([]float64{7.12345}); p50 != 7.123 || p99 != 7.123 {
		t.Errorf("Percentiles of one = %v, %v, want 7.123 twice", p50, p99)
	}
}

func TestRound(t *testing.T) {
	for _, c := range []struct {
		v      float64
		places int
		want   float64
	}{{1.23456, 3, 1.235}, {2052.4, 0, 2052}, {696.65, 1, 696.7}, {-0.5, 0, -1}} {
		if got := Round(c.v, c.places); got != c.want {
			t.Errorf("Round(%v, %d) = %v, want %v", c.v, c.places, got, c.want)
		}
	}
}

func TestMs(t *testing.T) {
	if got := Ms(1500 * time.Microsecond); got != 1.5 {
		t.Errorf("Ms(1.5ms) = %v, want 1.5", got)
	}
}
