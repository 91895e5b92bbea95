package stats

import (
	"math"
	"slices"
)

// OutlierZ is the modified z-score beyond which a value is flagged: 3.5, as
// Iglewicz and Hoaglin recommend and hyperfine warns.
const OutlierZ = 3.5

// Outliers returns the indices of xs whose modified z-score,
// 0.6745·(x − median)/MAD, exceeds OutlierZ in magnitude. When more than
// half the values are equal (MAD = 0) the mean absolute deviation stands in
// (z = (x − median)/(1.253314·MeanAD)); when every value is equal there
// are none. Fewer than three values have none: there is no "usual" to stray
// from. Outliers are flagged for a reader to look at, never dropped.
func Outliers(xs []float64) []int {
	if len(xs) < 3 {
		return nil
	}
	med := median(xs)
	dev := make([]float64, len(xs))
	var sum float64
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
		sum += dev[i]
	}
	scale := median(dev) / 0.6745
	if scale == 0 {
		scale = 1.253314 * sum / float64(len(xs))
	}
	if scale == 0 || math.IsNaN(scale) {
		return nil
	}
	var out []int
	for i, d := range dev {
		if d/scale > OutlierZ {
			out = append(out, i)
		}
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
