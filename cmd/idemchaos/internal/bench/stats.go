package bench

import (
	"math"
	"slices"
	"time"
)

// Summary describes a sample: its size, median, 90th percentile
// (nearest rank), min and max.
type Summary struct {
	N                     int
	Median, P90, Min, Max float64
}

// Summarize summarises xs (which it does not modify).
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	rank := int(math.Ceil(0.9*float64(n))) - 1
	return Summary{N: n, Median: med, P90: s[max(rank, 0)], Min: s[0], Max: s[n-1]}
}

// seconds converts durations to seconds for [Summarize].
func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}
