package stats

import "math"

// Interval methods reported in Comparison.Method.
const (
	MethodLogRatio = "log-ratio delta, Welch df"
	MethodDiff     = "Welch difference / |baseline mean|"
	// MethodAbsDiff: the baseline mean is 0, so no ratio exists; the
	// absolute difference and its Welch interval are given instead.
	MethodAbsDiff = "Welch difference (absolute)"
)

// Notes say why part of a comparison is undefined.
const (
	NoteNoVariance   = "no variance: interval undefined"
	NoteZeroBaseline = "baseline mean 0: ratio undefined, absolute difference shown"
)

// Alpha is the level of every interval and verdict: 95% intervals, and a
// difference is significant when p < Alpha.
const Alpha = 0.05

// Comparison of a sample against a baseline sample. One statistic gives
// the interval, the p-value and the verdict, so they never disagree: the
// interval excludes 0 exactly when p < Alpha.
type Comparison struct {
	// Pct is 100·(mean_x − mean_b)/|mean_b|: dividing by the magnitude keeps
	// "negative = lower" for negative metrics too. NaN when mean_b is 0.
	Pct float64
	// CI95 is the 95% interval of Pct; NaN when undefined.
	CI95 [2]float64
	// Diff is mean_x − mean_b and DiffCI95 its Welch interval (NaN when
	// undefined); given for every comparison, shown where no ratio exists.
	Diff     float64
	DiffCI95 [2]float64
	// PValue is the two-sided p-value of the statistic the interval is
	// built on; NaN when undefined.
	PValue float64
	// Defined reports whether an interval and a p-value exist: some
	// variance in at least one sample.
	Defined bool
	// Significant: Defined and PValue < Alpha.
	Significant bool
	Method      string // short name of the interval method
	Note        string // why something is undefined, or "" (NoteNoVariance, NoteZeroBaseline)
}

// Compare returns the difference of the means of x and base: relative (to
// the baseline's magnitude) with its 95% interval on the log of the ratio
// of means (delta method, Welch–Satterthwaite degrees of freedom) when both
// means have the same sign, else Welch's interval of the difference scaled
// by |mean_b|; absolute when mean_b is 0. ok is false when nothing can be
// said: fewer than two values in either sample, or non-finite values.
func Compare(x, base []float64) (Comparison, bool) {
	sx, sb := Summarize(x), Summarize(base)
	if sx.N < 2 || sb.N < 2 || !finite(sx.Mean, sb.Mean, sx.SD, sb.SD) {
		return Comparison{}, false
	}
	nan := math.NaN()
	c := Comparison{Pct: nan, CI95: [2]float64{nan, nan}, Diff: sx.Mean - sb.Mean, DiffCI95: [2]float64{nan, nan}, PValue: nan}
	if sb.Mean != 0 {
		c.Pct = 100 * c.Diff / math.Abs(sb.Mean)
	}
	if sx.SD == 0 && sb.SD == 0 {
		// The difference is what was measured, but nothing says how much it
		// would vary: no interval, no p-value, no claim of significance.
		c.Note = NoteNoVariance
		return c, true
	}
	c.Defined = true
	vx := sx.SD * sx.SD / float64(sx.N)
	vb := sb.SD * sb.SD / float64(sb.N)
	df := welchDF(vx, sx.N, vb, sb.N)
	q := tQuantile975(df)
	half := q * math.Sqrt(vx+vb)
	c.DiffCI95 = [2]float64{c.Diff - half, c.Diff + half}
	switch {
	case sb.Mean == 0:
		c.Method, c.Note = MethodAbsDiff, NoteZeroBaseline
		c.PValue = twoSidedP(c.Diff/math.Sqrt(vx+vb), df)
	case sx.Mean*sb.Mean > 0:
		c.Method = MethodLogRatio
		lvx := vx / (sx.Mean * sx.Mean)
		lvb := vb / (sb.Mean * sb.Mean)
		ldf := welchDF(lvx, sx.N, lvb, sb.N)
		se := math.Sqrt(lvx + lvb)
		lr := math.Log(sx.Mean / sb.Mean)
		lhalf := tQuantile975(ldf) * se
		lo, hi := 100*(math.Exp(lr-lhalf)-1), 100*(math.Exp(lr+lhalf)-1)
		if sb.Mean < 0 { // (x−b)/|b| = 1 − x/b when b < 0
			lo, hi = -hi, -lo
		}
		c.CI95 = [2]float64{lo, hi}
		c.PValue = twoSidedP(lr/se, ldf)
	default:
		// Means of different signs: no log ratio. The baseline mean is
		// treated as exact, so this interval is narrower than the truth.
		c.Method = MethodDiff
		c.CI95 = [2]float64{100 * c.DiffCI95[0] / math.Abs(sb.Mean), 100 * c.DiffCI95[1] / math.Abs(sb.Mean)}
		c.PValue = twoSidedP(c.Diff/math.Sqrt(vx+vb), df)
	}
	c.Significant = c.PValue < Alpha
	return c, true
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
