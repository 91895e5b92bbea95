package stats

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Holm adjusts p-values for a family of tests so that rejecting every
// hypothesis whose adjusted p is below α makes any false rejection at all
// happen with probability at most α, whatever the tests' dependence (Holm
// 1979): the i-th smallest of m p-values is multiplied by m − i + 1, and
// the adjusted values are made monotone. NaN p-values are not in the
// family and stay NaN.
func Holm(ps []float64) []float64 {
	idx, m := order(ps)
	out := nanLike(ps)
	running := 0.0
	for i, k := range idx {
		running = math.Max(running, math.Min(1, float64(m-i)*ps[k]))
		out[k] = running
	}
	return out
}

// BenjaminiHochberg adjusts p-values so that listing every hypothesis
// whose adjusted p (its q-value) is below α keeps the expected share of
// false discoveries among those listed at most α, for independent or
// positively dependent tests (Benjamini and Hochberg 1995): the i-th
// smallest of m p-values is multiplied by m/i, made monotone from the
// largest down. NaN p-values are not in the family and stay NaN.
func BenjaminiHochberg(ps []float64) []float64 {
	idx, m := order(ps)
	out := nanLike(ps)
	running := 1.0
	for i := m - 1; i >= 0; i-- {
		k := idx[i]
		running = math.Min(running, ps[k]*float64(m)/float64(i+1))
		out[k] = running
	}
	return out
}

// order is the indices of the non-NaN p-values, smallest first, and their
// number.
func order(ps []float64) ([]int, int) {
	var idx []int
	for i, p := range ps {
		if !math.IsNaN(p) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return ps[idx[a]] < ps[idx[b]] })
	return idx, len(idx)
}

func nanLike(ps []float64) []float64 {
	out := make([]float64, len(ps))
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// BinomialCI is the Clopper–Pearson 95% interval of a proportion from k
// successes in n trials: exact (it covers at least 95% of the time), so
// with few trials it is wide. NaN for n = 0.
func BinomialCI(k, n int) [2]float64 {
	if n <= 0 || k < 0 || k > n {
		return [2]float64{math.NaN(), math.NaN()}
	}
	lo, hi := 0.0, 1.0
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(Alpha / 2)
	}
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - Alpha/2)
	}
	return [2]float64{lo, hi}
}
