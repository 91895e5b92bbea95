package stats

import (
	"math"
	"testing"
)

// Worked by hand: p = 0.01, 0.04, 0.03, 0.005 (m = 4).
// Holm, sorted 0.005, 0.01, 0.03, 0.04 × 4, 3, 2, 1 = 0.02, 0.03, 0.06,
// 0.04 → monotone 0.02, 0.03, 0.06, 0.06.
// BH, sorted × 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04 → from the top
// down min: 0.02, 0.02, 0.04, 0.04. NaN is no test.
func TestHolmAndBH(t *testing.T) {
	ps := []float64{0.01, 0.04, math.NaN(), 0.03, 0.005}
	holm, bh := Holm(ps), BenjaminiHochberg(ps)
	for i, want := range []float64{0.03, 0.06, math.NaN(), 0.06, 0.02} {
		checkClose(t, "Holm", holm[i], want, 1e-12)
	}
	for i, want := range []float64{0.02, 0.04, math.NaN(), 0.04, 0.02} {
		checkClose(t, "BH", bh[i], want, 1e-12)
	}
	if h := Holm([]float64{0.6, 0.9}); h[0] != 1 || h[1] != 1 {
		t.Errorf("Holm capped at 1: %v", h)
	}
}

// Clopper–Pearson against values from scipy.stats.beta.ppf: 0 of 10 →
// [0, 0.30850]; 3 of 10 → [0.066739, 0.65245]; 10 of 10 → [0.69150, 1].
func TestBinomialCI(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{{0, 10, 0, 0.30849710}, {3, 10, 0.06673951, 0.65245285}, {10, 10, 0.69150290, 1}} {
		got := BinomialCI(c.k, c.n)
		checkClose(t, "lo", got[0], c.lo, 1e-6)
		checkClose(t, "hi", got[1], c.hi, 1e-6)
	}
}
