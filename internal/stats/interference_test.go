package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestInterferenceRatioSign(t *testing.T) {
	base := []float64{100, 102, 98, 101, 99}
	halved := []float64{50, 51, 49, 50.5, 49.5}
	// Throughput halved: IR = -0.5 (degradation).
	got, ok := InterferenceRatio(Sample{Values: halved}, Sample{Values: base}, false)
	if !ok || math.Abs(got.IR-(-0.5)) > 1e-12 || !got.Excludes0 || got.CI95[1] >= 0 {
		t.Fatalf("%+v", got)
	}
	// Latency doubled is also a degradation: IR = -1 with the sign flipped.
	got, ok = InterferenceRatio(Sample{Values: []float64{200, 204, 196, 202, 198}}, Sample{Values: base}, true)
	if !ok || math.Abs(got.IR-(-1)) > 1e-12 || got.CI95[1] >= 0 {
		t.Fatalf("%+v", got)
	}
}

func TestInterferenceRatioCoversTruthAndZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	sample := func(mu float64) []float64 {
		s := make([]float64, 10)
		for i := range s {
			s[i] = mu + rng.NormFloat64()*2
		}
		return s
	}
	// A/A: same distribution, the interval must contain 0 in about 95% of
	// experiments (checked loosely: at least 85 of 100).
	covered := 0
	for i := 0; i < 100; i++ {
		got, _ := InterferenceRatio(Sample{Values: sample(100)}, Sample{Values: sample(100)}, false)
		if !got.Excludes0 {
			covered++
		}
	}
	if covered < 85 {
		t.Errorf("A/A interval contained 0 in %d of 100 experiments", covered)
	}
}

func TestInterferenceRatioDegenerate(t *testing.T) {
	x, b := []float64{1, 2, 3, 4}, []float64{2, 3, 4, 5}
	a1, _ := InterferenceRatio(Sample{Values: x}, Sample{Values: b}, false)
	if a1.CI95[0] > a1.IR || a1.CI95[1] < a1.IR {
		t.Errorf("interval %v does not contain IR %v", a1.CI95, a1.IR)
	}
	if _, ok := InterferenceRatio(Sample{Values: []float64{1}}, Sample{Values: b}, false); ok {
		t.Error("n=1 must not give an interval")
	}
	if _, ok := InterferenceRatio(Sample{Values: x}, Sample{Values: []float64{0, 0}}, false); ok {
		t.Error("a zero baseline must not give a ratio")
	}
}
