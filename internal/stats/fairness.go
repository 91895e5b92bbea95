package stats

import "math"

// JainFairness is Jain's fairness index (Σx)²/(n·Σx²): 1 when all values
// are equal, 1/n when one value takes everything. It is NaN for no values
// or all zeros, where fairness is undefined.
func JainFairness(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(len(xs)) * sq)
}
