package bench

import (
	"slices"
	"time"
)

// Summary describes a sample of durations.
type Summary struct {
	N           int
	Median, P95 time.Duration
	Min, Max    time.Duration
}

// Summarize returns the summary of d (nearest-rank percentiles). It does not
// modify d. An empty sample gives a zero Summary.
func Summarize(d []time.Duration) Summary {
	if len(d) == 0 {
		return Summary{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return Summary{N: len(s), Median: Percentile(s, 50), P95: Percentile(s, 95), Min: s[0], Max: s[len(s)-1]}
}

// Percentile returns the nearest-rank p-th percentile of sorted, a
// non-empty ascending sample.
func Percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// Ratio returns a/b, or 0 when b is zero.
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
