package stats

import "math"

// Interference is S0's interference ratio of a target's metric with
// neighbours (x) against the target alone (base), with its interval.
type Interference struct {
	// IR = (mean_x − mean_base) / mean_base, sign-adjusted so that a
	// negative IR is always a degradation: for a lower-is-better metric
	// (latency, seconds) the ratio is negated.
	IR   float64
	CI95 [2]float64
	// Excludes0 is true when the interval lies entirely on one side of 0:
	// the neighbours made a difference beyond trial-to-trial noise.
	Excludes0 bool
	// Defined is false when neither sample varied: IR is what was
	// measured, CI95 is NaN and nothing is claimed (Note says so).
	Defined bool
	Method  string
	Note    string
}

// InterferenceRatio computes IR and its 95% interval with the method of
// Compare: Student t on the log of the ratio of means (delta method,
// Welch–Satterthwaite degrees of freedom). A percentile bootstrap was tried
// first and rejected: with the 3–10 trials a campaign has per cell it is
// too narrow, and the A/A check of the instrument (an idle neighbour) then
// "found" interference. ok is false when either sample has fewer than 2
// values or the ratio cannot be formed (a baseline mean of 0).
func InterferenceRatio(x, base Sample, lowerIsBetter bool) (Interference, bool) {
	c, ok := CompareSamples(x, base)
	if !ok || math.IsNaN(c.Pct) {
		return Interference{}, false
	}
	sign := 1.0
	if lowerIsBetter {
		sign = -1
	}
	lo, hi := sign*c.CI95[0]/100, sign*c.CI95[1]/100
	if lo > hi {
		lo, hi = hi, lo
	}
	out := Interference{IR: sign * c.Pct / 100, CI95: [2]float64{lo, hi}, Defined: c.Defined, Method: c.Method, Note: c.Note}
	out.Excludes0 = c.Significant
	return out, true
}
