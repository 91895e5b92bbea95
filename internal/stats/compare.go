package stats

import "math"

// Interval methods reported in Comparison.Method.
const (
	MethodLogRatio     = "log-ratio delta, Welch df"
	MethodDiff         = "Welch difference / baseline mean"
	MethodZeroVariance = "exact (no variance)"
)

// Comparison of a sample against a baseline sample.
type Comparison struct {
	Pct    float64    // 100*(mean_x - mean_b)/mean_b
	CI95   [2]float64 // 95% interval of Pct
	PValue float64    // Welch two-sided t-test of equal means
	Method string     // short name of the interval method
}

// Compare returns the relative difference of the means of x and base with
// its 95% interval and Welch's p-value. ok is false when it cannot be
// computed: fewer than two values in either sample, a zero or non-finite
// baseline mean, or non-finite spreads.
func Compare(x, base []float64) (Comparison, bool) {
	sx, sb := Summarize(x), Summarize(base)
	if sx.N < 2 || sb.N < 2 || sb.Mean == 0 ||
		!finite(sx.Mean, sb.Mean, sx.SD, sb.SD) {
		return Comparison{}, false
	}
	c := Comparison{Pct: 100 * (sx.Mean - sb.Mean) / sb.Mean}
	if sx.SD == 0 && sb.SD == 0 {
		// No spread: the difference is exactly what was measured.
		c.CI95 = [2]float64{c.Pct, c.Pct}
		c.PValue = 1
		if sx.Mean != sb.Mean {
			c.PValue = 0
		}
		c.Method = MethodZeroVariance
		return c, true
	}
	c.PValue = welchP(sx, sb)
	if sx.Mean*sb.Mean > 0 {
		c.CI95, c.Method = logRatioCI(sx, sb), MethodLogRatio
	} else {
		c.CI95, c.Method = diffCI(sx, sb), MethodDiff
	}
	return c, true
}

// welchP is the two-sided p-value of Welch's t-test of equal means.
func welchP(sx, sb Summary) float64 {
	vx := sx.SD * sx.SD / float64(sx.N)
	vb := sb.SD * sb.SD / float64(sb.N)
	t := (sx.Mean - sb.Mean) / math.Sqrt(vx+vb)
	return twoSidedP(t, welchDF(vx, sx.N, vb, sb.N))
}

// logRatioCI is the delta-method interval of log(m_x/m_b), mapped back to
// percent. Working on the log scale keeps the interval asymmetric the way a
// ratio is, and it requires both means to have the same sign.
func logRatioCI(sx, sb Summary) [2]float64 {
	vx := sx.SD * sx.SD / (float64(sx.N) * sx.Mean * sx.Mean)
	vb := sb.SD * sb.SD / (float64(sb.N) * sb.Mean * sb.Mean)
	half := tQuantile975(welchDF(vx, sx.N, vb, sb.N)) * math.Sqrt(vx+vb)
	lr := math.Log(sx.Mean / sb.Mean)
	return [2]float64{100 * (math.Exp(lr-half) - 1), 100 * (math.Exp(lr+half) - 1)}
}

// diffCI is the Welch interval of m_x-m_b scaled by m_b, for means of
// different signs where the log ratio is undefined. The baseline mean is
// treated as exact, so this interval is narrower than the truth.
func diffCI(sx, sb Summary) [2]float64 {
	vx := sx.SD * sx.SD / float64(sx.N)
	vb := sb.SD * sb.SD / float64(sb.N)
	half := tQuantile975(welchDF(vx, sx.N, vb, sb.N)) * math.Sqrt(vx+vb)
	d := sx.Mean - sb.Mean
	lo, hi := 100*(d-half)/sb.Mean, 100*(d+half)/sb.Mean
	if lo > hi { // a negative baseline mean flips the bounds
		lo, hi = hi, lo
	}
	return [2]float64{lo, hi}
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
