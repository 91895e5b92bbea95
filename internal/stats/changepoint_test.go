package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func steps(rng *rand.Rand, sd float64, levels ...[2]float64) []float64 {
	var x []float64
	for _, l := range levels {
		for range int(l[1]) {
			x = append(x, l[0]+sd*rng.NormFloat64())
		}
	}
	return x
}

func indices(cs []Changepoint) []int {
	out := []int{}
	for _, c := range cs {
		out = append(out, c.Index)
	}
	return out
}

// Synthetic series with known change points: each is found where it was
// made, and no other.
func TestChangepointsKnownSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	for _, tc := range []struct {
		name   string
		levels [][2]float64
		want   []int
	}{
		{"none", [][2]float64{{100, 30}}, []int{}},
		{"one step down", [][2]float64{{100, 15}, {80, 15}}, []int{15}},
		{"two steps", [][2]float64{{100, 10}, {120, 10}, {90, 10}}, []int{10, 20}},
		{"last point", [][2]float64{{100, 4}, {50, 1}}, []int{4}},
		{"early change", [][2]float64{{50, 2}, {100, 20}}, []int{2}},
	} {
		x := steps(rng, 1, tc.levels...)
		got := indices(Changepoints(x, 0.05))
		if !equalInts(got, tc.want) {
			t.Errorf("%s: found %v, want %v (series %.1f)", tc.name, got, tc.want, x)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The stated error rate: a series of independent normal points with one
// mean shows a change with probability at most alpha. 4000 series of
// lengths 3 to 40 at alpha 5%: the upper end of the Clopper–Pearson
// interval of the rate must reach 5% (an honest rule may be below it; it
// may not be above).
func TestChangepointsFalseAlarms(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 2))
	const n, alpha = 4000, 0.05
	alarms := 0
	for i := range n {
		x := steps(rng, 1+rng.Float64()*5, [2]float64{100, float64(3 + i%38)})
		if len(Changepoints(x, alpha)) > 0 {
			alarms++
		}
	}
	lo := BinomialCI(alarms, n)[0]
	t.Logf("false alarms: %d of %d (%.2f%%)", alarms, n, 100*float64(alarms)/n)
	if lo > alpha {
		t.Errorf("false alarms %d of %d: the interval's lower end %.4f is above %.2f", alarms, n, lo, alpha)
	}
}

// Power where the history test needs it: five runs, the last one at half
// the others' speed (machine.cpus halved), run-to-run noise 3%: found at
// alpha 5% shared by four series. (With five points the rule is weak:
// a 30% change at this noise is found about one time in six.)
func TestChangepointsLastRunPower(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	found := 0
	for range 1000 {
		x := steps(rng, 3, [2]float64{100, 4}, [2]float64{50, 1})
		cs := Changepoints(x, 0.05/4)
		if len(cs) == 1 && cs[0].Index == 4 {
			found++
		}
	}
	t.Logf("found the last run's change in %d of 1000", found)
	if found < 900 {
		t.Errorf("found the last run's 50%% change in only %d of 1000 series", found)
	}
}

func TestChangepointsDegenerate(t *testing.T) {
	for _, x := range [][]float64{nil, {1}, {1, 2}, {5, 5, 5, 5}, {1, math.NaN(), 3, 4}} {
		if cs := Changepoints(x, 0.05); len(cs) != 0 {
			t.Errorf("%v: %v", x, cs)
		}
	}
	cs := Changepoints([]float64{10, 10.1, 9.9, 10, 20, 20.1, 19.9, 20}, 0.05)
	if len(cs) != 1 || cs[0].Index != 4 || math.Abs(cs[0].Pct-100) > 2 || !(cs[0].Adjusted >= cs[0].PValue) {
		t.Errorf("%+v", cs)
	}
}
