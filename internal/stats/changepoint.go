package stats

import (
	"math"
	"sort"
)

// Changepoint is where a series' mean shifts: the points from Index on
// differ from those before it (back to the previous changepoint).
type Changepoint struct {
	Index int // the first point after the change (0-based)
	// Before and After are the means of the segments the change separates,
	// Pct the change from Before (NaN when Before is 0).
	Before, After, Pct float64
	// PValue is the two-sample t-test's between the segments, Adjusted it
	// times the number of positions the split could have taken (Bonferroni):
	// the probability bound the decision was taken at.
	PValue, Adjusted float64
}

// Changepoints finds the points where the mean of a noisy series shifts,
// by E-divisive means (Matteson & James, "A Nonparametric Approach for
// Multiple Change Point Analysis of Multivariate Data", JASA 109(505),
// 2014) with the significance test of Hunter (Fleming et al., "Hunter:
// Using Change Point Detection to Hunt for Performance Regressions",
// ICPE 2023), which replaced the method's permutation test by a t-test
// for series of benchmark results (MongoDB's use: Daly et al., ICPE 2020):
//
//   - in each segment, the split τ that maximises the energy statistic
//     q̂ = m·k/(m+k) · (2·E|X−Y| − E|X−X'| − E|Y−Y'|) of its left part
//     X (m points) against its right part Y (k points) is the candidate;
//   - the candidate is tested with Student's two-sample t-test (pooled
//     variance, m+k−2 degrees of freedom), and its p-value multiplied by
//     the m+k−1 positions the split could have taken (Bonferroni);
//   - the segment's candidate with the smallest adjusted p-value is
//     accepted when that is below alpha, the segment split in two, and
//     the search goes on in every segment until no candidate is accepted.
//
// Error rate: in a series of independent, normally distributed points
// with one mean, the first split is accepted with probability at most
// alpha (the union bound over positions holds whichever position the
// energy statistic picks), so a series without a change shows one with
// probability at most alpha; TestChangepointsFalseAlarms simulates it.
// A segment needs three points for a test (one degree of freedom).
//
// What it cannot see: a single point that differs in the middle of a
// series (one unusual run between ordinary ones) inflates the variance of
// whichever side holds it; it is found only when it is large against the
// run-to-run noise. A change in the last point is a change like any other.
func Changepoints(x []float64, alpha float64) []Changepoint {
	var out []Changepoint
	cuts := []int{0, len(x)}
	for {
		best, bestAt := Changepoint{Adjusted: math.Inf(1)}, -1
		for i := 0; i+1 < len(cuts); i++ {
			c, ok := candidate(x, cuts[i], cuts[i+1])
			if ok && c.Adjusted < best.Adjusted {
				best, bestAt = c, i
			}
		}
		if bestAt < 0 || !(best.Adjusted < alpha) {
			break
		}
		out = append(out, best)
		cuts = append(cuts, best.Index)
		sort.Ints(cuts)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// candidate is segment x[s:e)'s best split by the energy statistic, with
// its test; false when the segment is too short to test or holds a NaN.
func candidate(x []float64, s, e int) (Changepoint, bool) {
	n := e - s
	if n < 3 {
		return Changepoint{}, false
	}
	seg := x[s:e]
	for _, v := range seg {
		if !finite(v) {
			return Changepoint{}, false
		}
	}
	bestTau, bestQ := -1, math.Inf(-1)
	for tau := 1; tau < n; tau++ {
		if q := energyQ(seg[:tau], seg[tau:]); q > bestQ {
			bestTau, bestQ = tau, q
		}
	}
	before, after := seg[:bestTau], seg[bestTau:]
	p := pooledT(before, after)
	c := Changepoint{Index: s + bestTau, PValue: p, Adjusted: math.Min(1, p*float64(n-1))}
	c.Before, _ = welford(before)
	c.After, _ = welford(after)
	c.Pct = math.NaN()
	if c.Before != 0 {
		c.Pct = 100 * (c.After - c.Before) / math.Abs(c.Before)
	}
	return c, true
}

// energyQ is Matteson and James' q̂ with exponent 1: the scaled energy
// distance between the samples x and y (an empty within-sample sum, of a
// single point, counts 0).
func energyQ(x, y []float64) float64 {
	m, k := float64(len(x)), float64(len(y))
	var between float64
	for _, a := range x {
		for _, b := range y {
			between += math.Abs(a - b)
		}
	}
	e := 2*between/(m*k) - within(x) - within(y)
	return m * k / (m + k) * e
}

// within is the mean absolute difference of the pairs of xs (0 for fewer
// than two).
func within(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var s float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			s += math.Abs(xs[i] - xs[j])
		}
	}
	n := float64(len(xs))
	return s / (n * (n - 1) / 2)
}

// pooledT is the two-sided p-value of Student's two-sample t-test (pooled
// variance) between a and b, which hold three points or more together.
// Segments without any variance (counts that never moved) claim nothing,
// as everywhere in ctrbench (NoteNoVariance): p is 1.
func pooledT(a, b []float64) float64 {
	ma, ssa := welford(a)
	mb, ssb := welford(b)
	df := float64(len(a) + len(b) - 2)
	sp2 := (ssa + ssb) / df
	diff := ma - mb
	if sp2 == 0 {
		return 1
	}
	t := diff / math.Sqrt(sp2*(1/float64(len(a))+1/float64(len(b))))
	return twoSidedP(t, df)
}
