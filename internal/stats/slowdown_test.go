package stats

import (
	"math"
	"testing"
)

// Half the rate is twice the time; twice the time is twice the time; the
// interval is the inverse of the rate ratio's and contains the value.
func TestSlowdown(t *testing.T) {
	rates := []float64{49, 50, 51}
	base := []float64{99, 100, 101}
	s, ok := SlowdownOf(Sample{Values: rates}, Sample{Values: base}, false)
	if !ok || math.Abs(s.Value-2) > 1e-9 || !s.Defined || !(s.CI95[0] < 2 && 2 < s.CI95[1]) {
		t.Fatalf("rates halved: %+v %v, want 2 inside its interval", s, ok)
	}
	times := []float64{1.9, 2, 2.1}
	s, ok = SlowdownOf(Sample{Values: times}, Sample{Values: []float64{0.9, 1, 1.1}}, true)
	if !ok || math.Abs(s.Value-2) > 1e-9 || !(s.CI95[0] < 2 && 2 < s.CI95[1]) {
		t.Fatalf("times doubled: %+v %v", s, ok)
	}
	// The rate's interval is the inverse of the time's for the same data.
	c, _ := Compare(rates, base)
	if lo := 1 / (1 + c.CI95[1]/100); math.Abs(lo-func() float64 {
		s, _ := SlowdownOf(Sample{Values: rates}, Sample{Values: base}, false)
		return s.CI95[0]
	}()) > 1e-12 {
		t.Errorf("lower bound %v is not the inverse of the ratio's upper bound", lo)
	}
	if _, ok := SlowdownOf(Sample{Values: []float64{1, 2}}, Sample{Values: []float64{-1, 1}}, true); ok {
		t.Error("a baseline mean of 0 gave a slowdown")
	}
	s, ok = SlowdownOf(Sample{Values: []float64{2, 2}}, Sample{Values: []float64{1, 1}}, true)
	if !ok || s.Value != 2 || s.Defined || !math.IsNaN(s.CI95[0]) {
		t.Errorf("no variance: %+v %v, want 2 without an interval", s, ok)
	}
}
