package stats

import (
	"math"
	"testing"
)

// relClose reports whether got is within tol of want, relative to |want|
// (absolute when want is 0); NaN matches only NaN.
func relClose(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	if want == 0 {
		return math.Abs(got) <= tol
	}
	return math.Abs(got-want) <= tol*math.Abs(want)
}

func checkClose(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if !relClose(got, want, tol) {
		t.Errorf("%s = %.17g, want %.17g", name, got, want)
	}
}

// Quantiles of Student's t independent of gonum. df=2 and df=4 have closed
// forms (Hill 1970); df=7 was computed with mpmath at 30 digits by root-
// finding the regularized incomplete beta CDF.
var (
	t975df2 = 0.95 / math.Sqrt(2*0.975*0.025) // (2p-1)/sqrt(2p(1-p)) = 4.3026527297494...
	t975df4 = func() float64 {                // 2*sqrt(q-1), q = cos(acos(sqrt(a))/3)/sqrt(a), a = 4p(1-p)
		a := 4 * 0.975 * 0.025
		q := math.Cos(math.Acos(math.Sqrt(a))/3) / math.Sqrt(a)
		return 2 * math.Sqrt(q-1)
	}()
	t975df7 = 2.3646242515927853
)

func TestQuantileConstants(t *testing.T) {
	checkClose(t, "t(.975,2)", t975df2, 4.3026527297494639, 1e-12)
	checkClose(t, "t(.975,4)", t975df4, 2.7764451051977944, 1e-12)
	checkClose(t, "gonum t(.975,7)", tQuantile975(7), t975df7, 1e-9)
}

// MDE against a value worked by hand: cv 2%, 5 trials a side, df 8:
// (2.306004 + 0.889159) · 2 · sqrt(0.4) = 4.04129…
func TestMDE(t *testing.T) {
	if got := MDE(2, 5, 5); math.Abs(got-4.041291) > 1e-4 {
		t.Errorf("MDE = %v", got)
	}
	if !math.IsNaN(MDE(2, 1, 5)) {
		t.Error("MDE with one trial")
	}
}
