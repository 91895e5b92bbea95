package stats

import "math"

// Slowdown is S1's slowdown of a cell against its baseline: how many times
// longer the same work took — the ratio of mean times, or the inverse
// ratio of mean rates — so 1 is no change and 2 is twice as slow.
type Slowdown struct {
	Value float64
	// CI95 is the 95% interval, from Compare's interval on the log of the
	// ratio of means; NaN when neither sample varied.
	CI95 [2]float64
	// Defined is false when the interval is undefined (no variance).
	Defined bool
}

// SlowdownOf returns the slowdown of x against base, where x and base are
// times (lowerIsBetter) or rates. ok is false when no ratio exists: fewer
// than two values in a sample, or a mean that is not positive.
func SlowdownOf(x, base Sample, lowerIsBetter bool) (Slowdown, bool) {
	c, ok := CompareSamples(x, base)
	if !ok || c.Method == MethodDiff || c.Method == MethodAbsDiff || math.IsNaN(c.Pct) {
		return Slowdown{}, false
	}
	if sx, sb := Summarize(x.Values), Summarize(base.Values); sx.Mean <= 0 || sb.Mean <= 0 {
		return Slowdown{}, false
	}
	ratio := func(pct float64) float64 { return 1 + pct/100 } // mean_x / mean_b
	s := Slowdown{Value: ratio(c.Pct), CI95: [2]float64{math.NaN(), math.NaN()}, Defined: c.Defined}
	if c.Defined {
		s.CI95 = [2]float64{ratio(c.CI95[0]), ratio(c.CI95[1])}
	}
	if !lowerIsBetter { // a rate: the time for the same work is its inverse
		s.Value = 1 / s.Value
		s.CI95 = [2]float64{1 / s.CI95[1], 1 / s.CI95[0]}
	}
	return s, true
}
