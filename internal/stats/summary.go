// Package stats computes the per-cell statistics ctrbench reports: a
// summary of one sample and a comparison against a baseline sample. It only
// computes; it never reads or writes anything.
package stats

import "math"

// Range is the set of values a metric can take: [Lo, Hi], either end
// infinite when unbounded. An interval of the mean is built on a scale on
// which the range is the whole line — the log of the distance from Lo for
// a quantity bounded below (a rate, a time, a size), the logit for one
// bounded on both sides (a percentage, an index) — so it never leaves the
// range, however few trials there are.
type Range struct{ Lo, Hi float64 }

// Unbounded is the range of a metric that can take any value.
var Unbounded = Range{math.Inf(-1), math.Inf(1)}

// NonNegative is the range of a ratio-scale quantity: rates, times, sizes,
// counts.
var NonNegative = Range{0, math.Inf(1)}

// Contains reports whether every x is inside r.
func (r Range) Contains(xs []float64) bool {
	for _, x := range xs {
		if x < r.Lo || x > r.Hi {
			return false
		}
	}
	return true
}

// Sample is one cell's values of one metric and how they were gathered.
type Sample struct {
	Values []float64 // in run order
	// Stage, in a two-stage (Stein) design, is how many of the leading
	// Values formed the first stage: the number of trials was decided from
	// their variance, so every interval takes its variance (and degrees of
	// freedom) from them alone, whatever the later values show. 0 when the
	// number of trials was fixed in advance.
	Stage int
	// Range bounds the interval of the mean (the zero value: unbounded).
	// Values outside it make the sample unbounded: the range was wrong.
	Range Range
}

// Summary of one sample.
type Summary struct {
	N      int
	Mean   float64
	SD     float64    // sample standard deviation of all values (n-1 denominator)
	RSDPct float64    // 100*SD/|Mean|; NaN when Mean is 0
	CI95   [2]float64 // 95% interval of the mean, inside the sample's range
	// Stage is the two-stage design's first stage, whose variance the
	// interval used; 0 for a fixed number of trials.
	Stage int
}

// Summarize returns the summary of xs, a fixed number of trials of an
// unbounded quantity: the interval is Student's, mean ± t(0.975, n−1)·SD/√n.
// With no values everything is NaN; with one value only the mean is known.
func Summarize(xs []float64) Summary { return SummarizeSample(Sample{Values: xs}) }

// SummarizeSample returns the summary of s: mean and SD of all its values,
// and the 95% interval of the mean from the standard error the design
// gives (standardError; for a two-stage sample the wider of Stein's
// interval and Student's of all its values), mapped through the range's
// scale:
//
//	unbounded:        mean ± t·se
//	[lo, ∞):          lo + (mean − lo)·exp(±t·se/(mean − lo))
//	[lo, hi]:         lo + (hi − lo)·expit(logit(p) ± t·se/((hi − lo)·p(1 − p))),  p = (mean − lo)/(hi − lo)
//
// (the delta method on the log and logit scales, as the differences from
// a baseline are on the log scale). For a small coefficient of variation
// all three agree with Student's interval; for a wide one (n = 2, a
// stall) the mapped interval stays inside the range and is asymmetric.
func SummarizeSample(s Sample) Summary {
	nan := math.NaN()
	out := Summary{N: len(s.Values), Mean: nan, SD: nan, RSDPct: nan, CI95: [2]float64{nan, nan}}
	if out.N == 0 {
		return out
	}
	mean, m2 := welford(s.Values)
	out.Mean = mean
	if out.N < 2 {
		return out
	}
	out.SD = math.Sqrt(m2 / float64(out.N-1))
	if mean != 0 {
		out.RSDPct = 100 * out.SD / math.Abs(mean)
	}
	se, df, stage := standardError(s)
	out.Stage = stage
	r := rangeOf(s)
	out.CI95 = meanInterval(mean, se, tQuantile975(df), r)
	if stage > 0 && stage < out.N {
		// A two-stage sample: Stein's interval, or Student's of all the
		// values where that is wider (a stall or a tail the first stage
		// missed).
		all := meanInterval(mean, out.SD/math.Sqrt(float64(out.N)), tQuantile975(float64(out.N-1)), r)
		out.CI95 = hull(out.CI95, all)
	}
	return out
}

// standardError is the standard error of the sample's mean and its degrees
// of freedom: SD/√n with n − 1 for a fixed design; for a two-stage design
// the first stage's SD over √n with that stage's n₀ − 1 (Stein 1945: the
// number of trials depends on the first stage's variance only, which is
// independent of every mean for normal data, so the interval keeps its
// level whenever it stopped). stage is the first stage used, 0 for none.
func standardError(s Sample) (se, df float64, stage int) {
	n := len(s.Values)
	vals, stage := s.Values, 0
	if s.twoStage() {
		vals, stage = s.Values[:s.Stage], s.Stage
	}
	_, m2 := welford(vals)
	k := len(vals)
	return math.Sqrt(m2/float64(k-1)) / math.Sqrt(float64(n)), float64(k - 1), stage
}

// twoStage reports whether the sample is of a two-stage design with a
// usable first stage (two values or more).
func (s Sample) twoStage() bool { return s.Stage >= 2 && s.Stage <= len(s.Values) }

// rangeOf is the sample's range, unbounded when its values leave it.
func rangeOf(s Sample) Range {
	r := s.Range
	if r == (Range{}) || !r.Contains(s.Values) {
		return Unbounded
	}
	return r
}

// meanInterval maps mean ± q·se through the range's scale.
func meanInterval(mean, se, q float64, r Range) [2]float64 {
	if se == 0 || math.IsNaN(se) {
		return [2]float64{mean, mean}
	}
	loInf, hiInf := math.IsInf(r.Lo, -1), math.IsInf(r.Hi, 1)
	switch {
	case loInf && hiInf:
		return [2]float64{mean - q*se, mean + q*se}
	case hiInf: // bounded below
		d := mean - r.Lo
		k := q * se / d
		return [2]float64{r.Lo + d*math.Exp(-k), r.Lo + d*math.Exp(k)}
	case loInf: // bounded above
		d := r.Hi - mean
		k := q * se / d
		return [2]float64{r.Hi - d*math.Exp(k), r.Hi - d*math.Exp(-k)}
	}
	w := r.Hi - r.Lo
	p := (mean - r.Lo) / w
	g := math.Log(p / (1 - p))
	k := q * se / (w * p * (1 - p))
	return [2]float64{r.Lo + w*expit(g-k), r.Lo + w*expit(g+k)}
}

func expit(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

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
