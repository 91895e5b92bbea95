package stats

import (
	"math"
	"testing"
)

func TestJainFairness(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"empty", nil, math.NaN()},
		{"zeros", []float64{0, 0}, math.NaN()},
		{"equal", []float64{5, 5, 5, 5}, 1},
		{"one takes all", []float64{10, 0, 0, 0}, 0.25},
		// (1+2+3)² / (3·(1+4+9)) = 36/42 = 6/7.
		{"1,2,3", []float64{1, 2, 3}, 6.0 / 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkClose(t, "JainFairness", JainFairness(tc.xs), tc.want, 1e-12)
		})
	}
}
