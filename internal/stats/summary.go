// Package stats computes the per-cell statistics ctrbench reports: a
// summary of one sample and a comparison against a baseline sample. It only
// computes; it never reads or writes anything.
package stats

import "math"

// Summary of one sample.
type Summary struct {
	N      int
	Mean   float64
	SD     float64    // sample standard deviation (n-1 denominator)
	RSDPct float64    // 100*SD/|Mean|; NaN when Mean is 0
	CI95   [2]float64 // 95% Student t interval of the mean
}

// Summarize returns the summary of xs. With no values everything is NaN;
// with one value only the mean is known.
func Summarize(xs []float64) Summary {
	nan := math.NaN()
	s := Summary{N: len(xs), Mean: nan, SD: nan, RSDPct: nan, CI95: [2]float64{nan, nan}}
	if s.N == 0 {
		return s
	}
	mean, m2 := welford(xs)
	s.Mean = mean
	if s.N < 2 {
		return s
	}
	s.SD = math.Sqrt(m2 / float64(s.N-1))
	if mean != 0 {
		s.RSDPct = 100 * s.SD / math.Abs(mean)
	}
	half := tQuantile975(float64(s.N-1)) * s.SD / math.Sqrt(float64(s.N))
	s.CI95 = [2]float64{mean - half, mean + half}
	return s
}

// welford returns the mean and the sum of squared deviations from it.
// Welford's update avoids the cancellation of sum-of-squares formulas when
// values are large relative to their spread (e.g. nanosecond timestamps).
func welford(xs []float64) (mean, m2 float64) {
	for i, x := range xs {
		d := x - mean
		mean += d / float64(i+1)
		m2 += d * (x - mean)
	}
	return mean, m2
}
