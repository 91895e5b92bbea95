package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// tCDF4 is Student's t CDF with 4 degrees of freedom in closed form,
// independent of gonum: F(t) = 1/2 + (3/8)·(t/sqrt(k))·(1 - t²/(12k)),
// k = 1 + t²/4.
func tCDF4(t float64) float64 {
	k := 1 + t*t/4
	return 0.5 + 3.0/8*(t/math.Sqrt(k))*(1-t*t/(12*k))
}

func TestCompareLogRatio(t *testing.T) {
	// x = {10,12,14}: mean 12, SD 2; base = {5,6,7}: mean 6, SD 1.
	// Pct = 100*(12-6)/6 = 100.
	// Variance terms of the log ratio are equal: 4/(3·144) = 1/(3·36) = 1/108,
	// so se = sqrt(2/108) = sqrt(1/54) and Welch df = (2v)²/(2·v²/2) = 4.
	// Interval: 100*(2·exp(±t(.975,4)·sqrt(1/54)) - 1) = [37.0699..., 191.8219...].
	c, ok := Compare([]float64{10, 12, 14}, []float64{5, 6, 7})
	if !ok {
		t.Fatal("not ok")
	}
	h := t975df4 * math.Sqrt(1.0/54)
	checkClose(t, "Pct", c.Pct, 100, 1e-12)
	checkClose(t, "CI95[0]", c.CI95[0], 100*(2*math.Exp(-h)-1), 1e-9)
	checkClose(t, "CI95[1]", c.CI95[1], 100*(2*math.Exp(h)-1), 1e-9)
	checkClose(t, "CI95[0] mpmath", c.CI95[0], 37.069904012219072, 1e-9)
	if c.Method != MethodLogRatio {
		t.Errorf("Method = %q", c.Method)
	}
	if !(c.CI95[0] <= c.Pct && c.Pct <= c.CI95[1]) {
		t.Errorf("interval %v does not contain %g", c.CI95, c.Pct)
	}
}

func TestComparePValue(t *testing.T) {
	// The p-value is of the statistic the interval is built on: the log
	// ratio. x = {10,12,14}, base = {5,6,7} have equal variance terms on
	// the log scale, 1/108 each, so df = 4 and t = ln 2 / sqrt(1/54).
	c, ok := Compare([]float64{10, 12, 14}, []float64{5, 6, 7})
	if !ok {
		t.Fatal("not ok")
	}
	tt := math.Ln2 / math.Sqrt(1.0/54)
	checkClose(t, "PValue", c.PValue, 2*(1-tCDF4(tt)), 1e-9)
	if !c.Significant || !c.Defined || c.Note != "" {
		t.Errorf("%+v", c)
	}
}

// Issue 10, item 5: one comparison, one verdict. The old code took the
// star from the log-ratio interval and p from a Welch test of the
// difference; on random samples they disagreed about one time in 25. Now
// the interval excludes 0 exactly when p < 0.05, whatever the samples.
func TestCompareOneVerdict(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	disagree := 0
	for i := 0; i < 4000; i++ {
		n, m := 2+rng.IntN(8), 2+rng.IntN(8)
		x, b := make([]float64, n), make([]float64, m)
		shift := rng.Float64() * 0.3
		for j := range x {
			x[j] = 10 * (1 + shift) * math.Exp(rng.NormFloat64()*0.15)
		}
		for j := range b {
			b[j] = 10 * math.Exp(rng.NormFloat64()*0.15)
		}
		c, ok := Compare(x, b)
		if !ok || !c.Defined {
			t.Fatalf("%v %v: %+v", x, b, c)
		}
		excludes := c.CI95[0] > 0 || c.CI95[1] < 0
		if excludes != c.Significant || c.Significant != (c.PValue < Alpha) {
			disagree++
		}
	}
	if disagree != 0 {
		t.Errorf("interval and p-value disagreed %d times in 4000", disagree)
	}
}

// Issue 10, item 4: two cells without variance (counts, quantized timers)
// gave a zero-width interval, p = 0 and a star even at n = 2. Now the
// difference is given without an interval and nothing is claimed.
func TestCompareNoVariance(t *testing.T) {
	c, ok := Compare([]float64{3, 3}, []float64{2, 2})
	if !ok || c.Defined || c.Significant || c.Note != NoteNoVariance {
		t.Fatalf("%+v", c)
	}
	checkClose(t, "Pct", c.Pct, 50, 1e-12)
	if !math.IsNaN(c.CI95[0]) || !math.IsNaN(c.PValue) {
		t.Errorf("interval %v, p %v: want undefined", c.CI95, c.PValue)
	}
	ir, ok := InterferenceRatio(Sample{Values: []float64{3, 3}}, Sample{Values: []float64{2, 2}}, false)
	if !ok || ir.Defined || ir.Excludes0 || ir.Note != NoteNoVariance {
		t.Errorf("IR %+v", ir)
	}
}

// Issue 10, item 6: a baseline mean of 0 (0 → 5% loss) gave no result at
// all; now the absolute difference with its interval, and why no ratio.
// And the relative difference divides by |baseline|, so that for negative
// metrics a higher value still reads as positive.
func TestCompareZeroAndNegativeBaseline(t *testing.T) {
	c, ok := Compare([]float64{4, 5, 6}, []float64{0, 0, 0})
	if !ok || !c.Defined || !math.IsNaN(c.Pct) || c.Note != NoteZeroBaseline || c.Method != MethodAbsDiff {
		t.Fatalf("%+v", c)
	}
	// Diff 5, se = sqrt(1/3), df 2.
	half := t975df2 * math.Sqrt(1.0/3)
	checkClose(t, "Diff", c.Diff, 5, 1e-12)
	checkClose(t, "DiffCI95[0]", c.DiffCI95[0], 5-half, 1e-9)
	checkClose(t, "DiffCI95[1]", c.DiffCI95[1], 5+half, 1e-9)
	if !c.Significant {
		t.Errorf("5 ± %.2f excludes 0: %+v", half, c)
	}
	if _, ok := InterferenceRatio(Sample{Values: []float64{4, 5, 6}}, Sample{Values: []float64{0, 0, 0}}, false); ok {
		t.Errorf("an IR of a zero baseline")
	}
	// -5 against -10: higher, +50%, interval around +50%.
	neg, ok := Compare([]float64{-4.5, -5, -5.5}, []float64{-9, -10, -11})
	if !ok || math.Abs(neg.Pct-50) > 1e-9 || !(neg.CI95[0] < 50 && 50 < neg.CI95[1]) || neg.Method != MethodLogRatio {
		t.Errorf("negative metric: %+v", neg)
	}
	// Issue 24: means of different signs have no log ratio; the interval of
	// the difference over |baseline| treats that mean as exact, and the
	// comparison says so (the caveat lived only in a code comment).
	mixed, ok := Compare([]float64{1, 2, 3}, []float64{-1, -2, -3})
	if !ok || mixed.Method != MethodDiff || mixed.Note != NoteMixedSigns {
		t.Errorf("mixed signs: %+v", mixed)
	}
}

func TestCompareIdenticalAndSeparated(t *testing.T) {
	a := []float64{99, 100, 101, 102, 98}
	c, ok := Compare(a, a)
	if !ok {
		t.Fatal("identical: not ok")
	}
	if c.PValue != 1 || c.Pct != 0 {
		t.Errorf("identical: Pct %g PValue %g, want 0 and 1", c.Pct, c.PValue)
	}
	if !(c.CI95[0] < 0 && c.CI95[1] > 0) {
		t.Errorf("identical: interval %v should straddle 0", c.CI95)
	}

	b := []float64{199, 200, 201, 202, 198}
	c, ok = Compare(b, a)
	if !ok {
		t.Fatal("separated: not ok")
	}
	if c.PValue >= 0.001 {
		t.Errorf("separated: PValue %g, want < 0.001", c.PValue)
	}
	if !(c.CI95[0] > 0 && c.CI95[0] <= c.Pct && c.Pct <= c.CI95[1]) {
		t.Errorf("separated: interval %v, Pct %g", c.CI95, c.Pct)
	}
}

func TestCompareDegenerate(t *testing.T) {
	tests := []struct {
		name    string
		x, base []float64
		ok      bool
		pct     float64
		ci      [2]float64
		p       float64
		method  string
	}{
		{"x n=1", []float64{1}, []float64{1, 2}, false, 0, [2]float64{}, 0, ""},
		{"base n=1", []float64{1, 2}, []float64{1}, false, 0, [2]float64{}, 0, ""},
		{"empty", nil, nil, false, 0, [2]float64{}, 0, ""},

		{"NaN", []float64{1, math.NaN()}, []float64{1, 2}, false, 0, [2]float64{}, 0, ""},
		// x = {-1,1}: mean 0, SD sqrt2; base = {2,2}: mean 2, SD 0.
		// Pct = -100; Welch on the difference: se = sqrt(2/2) = 1, df = 1,
		// t(.975,1) = tan(0.475π) = 12.706204736174705; interval (-2 ± t)/2·100.
		// p: t-stat -2, df 1: p = 1 - 2/π·atan(2).
		{"sign change", []float64{-1, 1}, []float64{2, 2}, true, -100,
			[2]float64{100 * (-2 - 12.706204736174705) / 2, 100 * (-2 + 12.706204736174705) / 2},
			1 - 2/math.Pi*math.Atan(2), MethodDiff},
		// Negative baseline: x = {1,3}, base = {-2,-4}: Pct = 100·(2-(-3))/|-3| = +166.67
		// (x is higher); difference 5, se sqrt(1+1), df 2; interval 100·(5 ± t2·sqrt2)/3.
		{"negative baseline", []float64{1, 3}, []float64{-2, -4}, true, 500.0 / 3,
			[2]float64{100 * (5 - t975df2*math.Sqrt2) / 3, 100 * (5 + t975df2*math.Sqrt2) / 3},
			math.NaN(), MethodDiff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := Compare(tc.x, tc.base)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			checkClose(t, "Pct", c.Pct, tc.pct, 1e-9)
			checkClose(t, "CI95[0]", c.CI95[0], tc.ci[0], 1e-9)
			checkClose(t, "CI95[1]", c.CI95[1], tc.ci[1], 1e-9)
			if !math.IsNaN(tc.p) {
				checkClose(t, "PValue", c.PValue, tc.p, 1e-9)
			}
			if c.Method != tc.method {
				t.Errorf("Method = %q, want %q", c.Method, tc.method)
			}
			if !(c.CI95[0] <= c.Pct && c.Pct <= c.CI95[1]) {
				t.Errorf("interval %v does not contain %g", c.CI95, c.Pct)
			}
		})
	}
}

func TestCompareBothNegative(t *testing.T) {
	// Both means negative: the ratio is positive, so the log-ratio method
	// applies; relative to |baseline|, -12 against -6 is 100% lower, the
	// mirror of +12 against +6.
	neg, nok := Compare([]float64{-10, -12, -14}, []float64{-5, -6, -7})
	pos, pok := Compare([]float64{10, 12, 14}, []float64{5, 6, 7})
	if !nok || !pok {
		t.Fatal("not ok")
	}
	if neg.Method != MethodLogRatio {
		t.Errorf("Method = %q", neg.Method)
	}
	checkClose(t, "Pct", neg.Pct, -pos.Pct, 1e-12)
	checkClose(t, "CI95[0]", neg.CI95[0], -pos.CI95[1], 1e-12)
	checkClose(t, "CI95[1]", neg.CI95[1], -pos.CI95[0], 1e-12)
}
