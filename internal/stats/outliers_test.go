package stats

import (
	"reflect"
	"testing"
)

func TestOutliers(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want []int
	}{
		{[]float64{10, 11, 9, 10.5, 9.5, 30}, []int{5}},             // one far value
		{[]float64{10, 11, 9, 10.5, 9.5, 12}, nil},                  // spread, none far
		{[]float64{5, 5, 5, 5, 9}, []int{4}},                        // MAD 0: mean absolute deviation stands in
		{[]float64{5, 5, 5, 5}, nil},                                // no spread at all
		{[]float64{1, 100}, nil},                                    // too few to say
		{[]float64{100, 101, 99, 100, 1, 100.5, 99.5}, []int{4}},    // a low one too
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, nil}, // uniform
	} {
		if got := Outliers(c.xs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Outliers(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}
