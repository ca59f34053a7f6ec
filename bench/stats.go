package main

import (
	"math"
	"slices"
)

// percentile is the nearest-rank percentile p (0-100) of xs; NaN for none.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(len(s)-1, max(0, rank-1))]
}

// spread is a figure over the repetitions: median, minimum and maximum of
// the repetitions that produced it, N of them.
type spread struct {
	Median, Min, Max float64
	N                int
}

// spreadOf summarizes xs, skipping NaN (a repetition without the figure).
// The median of an even count is the lower middle value, a figure that was
// measured rather than an average of two.
func spreadOf(xs []float64) spread {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return spread{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(s)
	return spread{Median: s[(len(s)-1)/2], Min: s[0], Max: s[len(s)-1], N: len(s)}
}
