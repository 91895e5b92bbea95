package stats

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"
)

// FirstStage is how many of a two-stage sample's leading values form its
// first stage, given the repetition number of each usable value in run
// order (1-based, counting every recorded trial of the cell: one that
// failed uses up its number): the values of the first min repetitions —
// or, when fewer than two of them were usable, of the repetitions up to
// the second usable value. 0 while fewer than two values are usable.
func FirstStage(reps []int, min int) int {
	if len(reps) < 2 {
		return 0
	}
	last := max(min, reps[1])
	n := 0
	for _, r := range reps {
		if r <= last {
			n++
		}
	}
	return n
}

// SteinN is the number of values a two-stage sample needs in all for its
// 95% interval to be at most rci (a fraction) of the first stage's mean
// either side (Stein 1945):
//
//	N = max(n₀, ⌈(t(0.975, n₀−1) · s₀ / (rci · |m₀|))²⌉)
//
// with n₀ values in the first stage, their mean m₀ and standard deviation
// s₀. The interval at the end is mean ± t(0.975, n₀−1)·s₀/√N
// (SummarizeSample with Stage n₀): its width is decided by the first
// stage, so its coverage does not depend on when sampling stopped. 0 when
// the first stage has fewer than two values or a mean of 0.
func SteinN(first []float64, rci float64) int {
	n0 := len(first)
	if n0 < 2 || rci <= 0 {
		return 0
	}
	m, m2 := welford(first)
	if m == 0 {
		return 0
	}
	s := math.Sqrt(m2 / float64(n0-1))
	need := tQuantile975(float64(n0-1)) * s / (rci * math.Abs(m))
	return max(n0, int(math.Ceil(need*need-1e-9)))
}

// tDiff is the distribution of a·T1 − b·T2 for independent Student t
// variables T1 ~ t(k1) and T2 ~ t(k2) and weights with a² + b² = 1: the
// reference distribution of a difference of two samples of a two-stage
// design (Chapman 1950), where each sample's mean is its first stage's t
// variable times a width fixed by that stage. It is symmetric about 0.
type tDiff struct {
	a, b   float64
	k1, k2 float64
}

// tDiffNodes is the Gauss–Legendre order of tDiff's integral: its CDF
// agrees with 10⁶ simulated draws to 0.001 (TestTDiff).
const tDiffNodes = 96

var tDiffNodesU, tDiffNodesW = func() ([]float64, []float64) {
	u, w := make([]float64, tDiffNodes), make([]float64, tDiffNodes)
	quad.Legendre{}.FixedLocations(u, w, 0, 1)
	return u, w
}()

// cdf is P(a·T1 − b·T2 ≤ x), integrated over the variable with the
// smaller weight on its quantile scale, the other's CDF inside (smooth,
// as its weight is at least 1/√2).
func (d tDiff) cdf(x float64) float64 {
	big, small := d.k1, d.k2
	a, b, sign := d.a, d.b, 1.0
	if a < b { // P(a·T1 − b·T2 ≤ x) = P(b·T2 − a·T1 ≥ −x) = 1 − P(b·T2 − a·T1 < −x)
		big, small, a, b, x, sign = small, big, b, a, -x, -1
	}
	var p float64
	for i, q := range tQuantiles(small) {
		p += tDiffNodesW[i] * tCDF((x+b*q)/a, big)
	}
	if sign < 0 {
		return 1 - p
	}
	return p
}

// quantile975 is the 0.975 quantile of a·T1 − b·T2, interpolated in a
// table over the weights' angle computed once per pair of degrees of
// freedom (tDiffTable): within 1e-5 of the root (TestTDiff).
func (d tDiff) quantile975() float64 {
	theta := math.Atan2(d.b, d.a) // in [0, π/2]
	tab := tDiffTable(d.k1, d.k2)
	x := theta / (math.Pi / 2) * float64(len(tab)-1)
	i := min(int(x), len(tab)-2)
	f := x - float64(i)
	return tab[i]*(1-f) + tab[i+1]*f
}

// tDiffTableSize is the number of angles tabulated per pair of degrees of
// freedom.
const tDiffTableSize = 129

// tDiffTable is the 0.975 quantile at tDiffTableSize angles from 0
// (all weight on T1) to π/2 (all on T2).
func tDiffTable(k1, k2 float64) []float64 {
	key := [2]float64{k1, k2}
	if v, ok := tDiffTables.Load(key); ok {
		return v.([]float64)
	}
	tab := make([]float64, tDiffTableSize)
	for i := range tab {
		theta := float64(i) / float64(len(tab)-1) * math.Pi / 2
		tab[i] = tDiff{a: math.Cos(theta), b: math.Sin(theta), k1: k1, k2: k2}.root975()
	}
	tDiffTables.Store(key, tab)
	return tab
}

var tDiffTables sync.Map // [k1, k2] -> quantiles by angle

// root975 is the 0.975 quantile of a·T1 − b·T2, by the Illinois
// variant of regula falsi from a bracket around Welch's approximation.
func (d tDiff) root975() float64 {
	f := func(x float64) float64 { return d.cdf(x) - 0.975 }
	guess := tQuantile975(welchDF(d.a*d.a, d.k1, d.b*d.b, d.k2))
	lo, hi := guess/2, guess*2
	flo, fhi := f(lo), f(hi)
	for flo > 0 {
		lo /= 2
		flo = f(lo)
	}
	for fhi < 0 {
		hi *= 2
		fhi = f(hi)
	}
	side := 0
	for range 100 {
		x := (lo*fhi - hi*flo) / (fhi - flo)
		fx := f(x)
		if math.Abs(fx) < 1e-12 || hi-lo < 1e-12*x {
			return x
		}
		if fx < 0 {
			lo, flo = x, fx
			if side == -1 {
				fhi /= 2
			}
			side = -1
		} else {
			hi, fhi = x, fx
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
	return (lo + hi) / 2
}

// twoSidedP is the two-sided p-value of statistic z under the distribution.
func (d tDiff) twoSidedP(z float64) float64 {
	return math.Min(1, 2*(1-d.cdf(math.Abs(z))))
}

// tQuantiles are the quantiles of t(k) at tDiff's nodes, computed once per k.
func tQuantiles(k float64) []float64 {
	if v, ok := tQuantileCache.Load(k); ok {
		return v.([]float64)
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: k}
	q := make([]float64, len(tDiffNodesU))
	for i, u := range tDiffNodesU {
		q[i] = t.Quantile(u)
	}
	tQuantileCache.Store(k, q)
	return q
}

var tQuantileCache sync.Map // k -> quantiles at tDiffNodesU

// tCDF is Student's t CDF with k degrees of freedom: closed forms for the
// first stages of 2 to 5 trials (k = 1…4, the usual ones), gonum's
// incomplete beta otherwise.
func tCDF(t, k float64) float64 {
	switch k {
	case 1:
		return 0.5 + math.Atan(t)/math.Pi
	case 2:
		return 0.5 + t/(2*math.Sqrt(2+t*t))
	case 3:
		u := t / math.Sqrt(3)
		return 0.5 + (u/(1+u*u)+math.Atan(u))/math.Pi
	case 4:
		v := 1 + t*t/4
		return 0.5 + 3.0/8*(t/math.Sqrt(v))*(1-t*t/(12*v))
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: k}.CDF(t)
}
