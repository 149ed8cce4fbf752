// Package figures holds the arithmetic of the figures dagen's benchmark
// (examples/bench) and its peers (bench/river, bench/dbos) report, so
// that the three compute them alike: nearest-rank percentiles,
// milliseconds and rounding.
package figures

import (
	"math"
	"sort"
	"time"
)

// Percentiles returns the nearest-rank 50th and 99th percentiles of xs,
// rounded to three decimals (µs, for values in ms); 0, 0 for none.
func Percentiles(xs []float64) (p50, p99 float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return Round(s[min(max(i, 0), len(s)-1)], 3)
	}
	return rank(0.50), rank(0.99)
}

// Ms returns d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Round rounds v to places decimals, halves away from zero.
func Round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}
