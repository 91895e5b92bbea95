package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// tDiff's CDF against 10⁶ seeded draws of a·T1 − b·T2, and its quantile
// at the limits: all weight on one side is that side's t; two large dfs
// are the normal.
func TestTDiff(t *testing.T) {
	src := rand.NewPCG(24, 7)
	for _, c := range []struct{ a, k1, k2 float64 }{{0.8, 2, 2}, {0.3, 2, 9}, {1 / math.Sqrt2, 4, 4}} {
		d := tDiff{a: c.a, b: math.Sqrt(1 - c.a*c.a), k1: c.k1, k2: c.k2}
		t1 := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: c.k1, Src: src}
		t2 := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: c.k2, Src: src}
		const draws = 1000000
		xs := []float64{-3, -1, 0.5, 2, 4}
		below := make([]int, len(xs))
		for range draws {
			v := d.a*t1.Rand() - d.b*t2.Rand()
			for i, x := range xs {
				if v <= x {
					below[i]++
				}
			}
		}
		for i, x := range xs {
			if got, sim := d.cdf(x), float64(below[i])/draws; math.Abs(got-sim) > 0.0015 {
				t.Errorf("%+v: CDF(%g) = %.5f, simulated %.5f", c, x, got, sim)
			}
		}
		if q, b := d.quantile975(), d.root975(); math.Abs(q-b) > 1e-5*b {
			t.Errorf("%+v: tabulated quantile %.8f, root %.8f", c, q, b)
		}
	}
	checkClose(t, "all on T1", tDiff{a: 1, b: 0, k1: 2, k2: 7}.quantile975(), t975df2, 1e-6)
	checkClose(t, "all on T2", tDiff{a: 0, b: 1, k1: 7, k2: 4}.quantile975(), t975df4, 1e-6)
	checkClose(t, "normal", tDiff{a: 0.6, b: 0.8, k1: 1e7, k2: 1e7}.quantile975(), 1.959964, 1e-4)
}

// The first stage: the first min repetitions' usable values, or up to the
// second usable value when fewer came in them.
func TestFirstStage(t *testing.T) {
	for _, c := range []struct {
		reps []int
		min  int
		want int
	}{
		{[]int{1, 2, 3, 4, 5}, 3, 3},
		{[]int{1, 3, 4, 5}, 3, 2},    // repetition 2 failed
		{[]int{2, 5, 6}, 3, 2},       // two failed: the stage waits for the second usable value
		{[]int{3}, 3, 0},             // one usable value: no stage yet
		{[]int{1, 2, 3, 4, 5}, 5, 5}, // min 5
	} {
		if got := FirstStage(c.reps, c.min); got != c.want {
			t.Errorf("FirstStage(%v, %d) = %d, want %d", c.reps, c.min, got, c.want)
		}
	}
}

// Stein's N worked by hand: first stage {98, 100, 102}: mean 100, SD 2;
// t(0.975, 2)·2/(0.02·100) = 4.3027 → N = ⌈18.51⌉ = 19. A precise first
// stage needs no more; a mean of 0 says nothing.
func TestSteinN(t *testing.T) {
	if got := SteinN([]float64{98, 100, 102}, 0.02); got != 19 {
		t.Errorf("SteinN = %d, want 19", got)
	}
	if got := SteinN([]float64{99.9, 100, 100.1}, 0.02); got != 3 {
		t.Errorf("SteinN of a precise stage = %d, want 3", got)
	}
	if got := SteinN([]float64{-1, 0, 1}, 0.02); got != 0 {
		t.Errorf("SteinN of mean 0 = %d", got)
	}
}

// The closed forms of tCDF against gonum's incomplete beta.
func TestTCDF(t *testing.T) {
	for k := 1.0; k <= 5; k++ {
		for _, x := range []float64{-30, -4.3, -1, 0, 0.5, 2.7, 12} {
			want := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: k}.CDF(x)
			if got := tCDF(x, k); math.Abs(got-want) > 1e-12 {
				t.Errorf("tCDF(%g, %g) = %.15f, want %.15f", x, k, got, want)
			}
		}
	}
}
