package stats

import "math"

// Interval methods reported in Comparison.Method.
const (
	MethodLogRatio = "log-ratio delta, Welch df"
	// MethodLogRatioTwoStage: a sample of a two-stage (adaptive) design is
	// in the comparison: both Chapman's test on the first stages and
	// Welch's on all trials must find the difference (CompareSamples).
	MethodLogRatioTwoStage = "log-ratio delta, two-stage: Chapman on first stages and Welch on all trials"
	MethodDiff             = "Welch difference / |baseline mean|"
	// MethodAbsDiff: the baseline mean is 0, so no ratio exists; the
	// absolute difference and its Welch interval are given instead.
	MethodAbsDiff = "Welch difference (absolute)"
)

// Notes say why part of a comparison is undefined.
const (
	NoteNoVariance   = "no variance: interval undefined"
	NoteZeroBaseline = "baseline mean 0: ratio undefined, absolute difference shown"
	// NoteMixedSigns: the means have different signs, so there is no log
	// ratio; the interval of the difference divided by |baseline mean|
	// treats that mean as exact and is narrower than the truth.
	NoteMixedSigns = "means of different signs: interval treats the baseline mean as exact, narrower than the truth"
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
	Note        string // why something is undefined or approximate, or "" (NoteNoVariance, NoteZeroBaseline, NoteMixedSigns)
}

// Compare returns the difference of the means of x and base, two samples
// of a fixed number of trials (CompareSamples).
func Compare(x, base []float64) (Comparison, bool) {
	return CompareSamples(Sample{Values: x}, Sample{Values: base})
}

// CompareSamples returns the difference of the means of x and base:
// relative (to the baseline's magnitude) with its 95% interval on the log
// of the ratio of means (delta method, Welch–Satterthwaite degrees of
// freedom) when both means have the same sign, else Welch's interval of
// the difference scaled by |mean_b|; absolute when mean_b is 0. ok is
// false when nothing can be said: fewer than two values in either sample,
// or non-finite values.
//
// When either sample is of a two-stage (adaptive) design, two tests must
// agree: the same statistic on the first stages' variances referred to the
// difference of their t variables (Chapman 1950: exact for normal trials
// whenever the cells stopped), and Welch's on all the trials (which sees
// a stall or a tail the first stage missed). The interval is the hull of
// their two intervals and the p-value the larger of theirs, so the
// interval excludes 0 exactly when both tests reject.
func CompareSamples(x, base Sample) (Comparison, bool) {
	if !x.twoStage() && !base.twoStage() {
		return compareDesign(x, base, false)
	}
	first, ok := compareDesign(x, base, true)
	if !ok {
		return first, false
	}
	all, _ := compareDesign(Sample{Values: x.Values}, Sample{Values: base.Values}, false)
	switch {
	case !first.Defined:
		return all, true
	case !all.Defined:
		return first, true
	}
	c := first
	c.CI95 = hull(first.CI95, all.CI95)
	c.DiffCI95 = hull(first.DiffCI95, all.DiffCI95)
	c.PValue = math.Max(first.PValue, all.PValue)
	c.Significant = c.PValue < Alpha
	return c, true
}

// hull is the smallest interval holding a and b; NaN ends are ignored.
func hull(a, b [2]float64) [2]float64 {
	lo, hi := a[0], a[1]
	if !math.IsNaN(b[0]) && (math.IsNaN(lo) || b[0] < lo) {
		lo = b[0]
	}
	if !math.IsNaN(b[1]) && (math.IsNaN(hi) || b[1] > hi) {
		hi = b[1]
	}
	return [2]float64{lo, hi}
}

// compareDesign is CompareSamples' statistic with each sample's variance
// term and degrees of freedom from its design (standardError); twoStage
// refers it to Chapman's distribution instead of Welch's t.
func compareDesign(x, base Sample, twoStage bool) (Comparison, bool) {
	sx, sb := Summarize(x.Values), Summarize(base.Values)
	if sx.N < 2 || sb.N < 2 || !finite(sx.Mean, sb.Mean, sx.SD, sb.SD) {
		return Comparison{}, false
	}
	nan := math.NaN()
	c := Comparison{Pct: nan, CI95: [2]float64{nan, nan}, Diff: sx.Mean - sb.Mean, DiffCI95: [2]float64{nan, nan}, PValue: nan}
	if sb.Mean != 0 {
		c.Pct = 100 * c.Diff / math.Abs(sb.Mean)
	}
	sex, dfx, _ := standardError(x)
	seb, dfb, _ := standardError(base)
	if sex == 0 && seb == 0 {
		// The difference is what was measured, but nothing says how much it
		// would vary: no interval, no p-value, no claim of significance.
		c.Note = NoteNoVariance
		return c, true
	}
	c.Defined = true
	vx, vb := sex*sex, seb*seb
	ref := referenceOf(vx, dfx, vb, dfb, twoStage)
	half := ref.quantile975() * math.Sqrt(vx+vb)
	c.DiffCI95 = [2]float64{c.Diff - half, c.Diff + half}
	switch {
	case sb.Mean == 0:
		c.Method, c.Note = MethodAbsDiff, NoteZeroBaseline
		c.PValue = ref.twoSidedP(c.Diff / math.Sqrt(vx+vb))
	case sx.Mean*sb.Mean > 0:
		c.Method = MethodLogRatio
		if twoStage {
			c.Method = MethodLogRatioTwoStage
		}
		lvx := vx / (sx.Mean * sx.Mean)
		lvb := vb / (sb.Mean * sb.Mean)
		lref := referenceOf(lvx, dfx, lvb, dfb, twoStage)
		se := math.Sqrt(lvx + lvb)
		lr := math.Log(sx.Mean / sb.Mean)
		lhalf := lref.quantile975() * se
		lo, hi := 100*(math.Exp(lr-lhalf)-1), 100*(math.Exp(lr+lhalf)-1)
		if sb.Mean < 0 { // (x−b)/|b| = 1 − x/b when b < 0
			lo, hi = -hi, -lo
		}
		c.CI95 = [2]float64{lo, hi}
		c.PValue = lref.twoSidedP(lr / se)
	default:
		// Means of different signs: no log ratio. The baseline mean is
		// treated as exact, so this interval is narrower than the truth
		// (NoteMixedSigns says so wherever it is shown).
		c.Method, c.Note = MethodDiff, NoteMixedSigns
		c.CI95 = [2]float64{100 * c.DiffCI95[0] / math.Abs(sb.Mean), 100 * c.DiffCI95[1] / math.Abs(sb.Mean)}
		c.PValue = ref.twoSidedP(c.Diff / math.Sqrt(vx+vb))
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

// reference is the distribution a comparison's statistic is referred to.
type reference interface {
	quantile975() float64
	twoSidedP(z float64) float64
}

// referenceOf is the reference distribution of a difference whose variance
// is a + b, the terms estimated with dfa and dfb degrees of freedom:
// Welch–Satterthwaite's t for samples of a fixed size; for a two-stage
// design, where each side's width was fixed by its first stage, the
// weighted difference of their t variables (tDiff).
func referenceOf(a, dfa, b, dfb float64, twoStage bool) reference {
	if !twoStage {
		return welchT{welchDF(a, dfa, b, dfb)}
	}
	s := math.Sqrt(a + b)
	return tDiff{a: math.Sqrt(a) / s, b: math.Sqrt(b) / s, k1: dfa, k2: dfb}
}

// welchT is Student's t with Welch–Satterthwaite's degrees of freedom.
type welchT struct{ df float64 }

func (w welchT) quantile975() float64        { return tQuantile975(w.df) }
func (w welchT) twoSidedP(z float64) float64 { return twoSidedP(z, w.df) }

// WelchLogRatio is the statistic of CompareSamples for two samples of a
// fixed size given by their moments (a report's mean, SD and n): the log
// of the ratio of means, its standard error by the delta method and its
// Welch–Satterthwaite degrees of freedom. ok is false when the means are
// not both positive, a side has fewer than two values, or neither varied.
func WelchLogRatio(mx, sdx float64, nx int, mb, sdb float64, nb int) (lr, se, df float64, ok bool) {
	if nx < 2 || nb < 2 || !(mx > 0) || !(mb > 0) || !finite(mx, mb, sdx, sdb) {
		return 0, 0, 0, false
	}
	a := sdx * sdx / (float64(nx) * mx * mx)
	b := sdb * sdb / (float64(nb) * mb * mb)
	if a+b == 0 {
		return 0, 0, 0, false
	}
	return math.Log(mx / mb), math.Sqrt(a + b), welchDF(a, float64(nx-1), b, float64(nb-1)), true
}
