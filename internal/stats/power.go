package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Power is the chance of detecting a true difference that MDE reports.
const Power = 0.8

// MDE is the minimum detectable effect, in percent of the mean: the
// smallest relative difference between two cells of n1 and n2 trials that
// a two-sided test at level Alpha detects with probability Power, when
// trials vary with coefficient of variation cvPct (percent):
//
//	MDE = (t(1−α/2, df) + t(Power, df)) · cv · sqrt(1/n1 + 1/n2),  df = n1 + n2 − 2.
//
// NaN with fewer than two trials on a side.
func MDE(cvPct float64, n1, n2 int) float64 {
	if n1 < 2 || n2 < 2 || math.IsNaN(cvPct) {
		return math.NaN()
	}
	df := float64(n1 + n2 - 2)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	return (t.Quantile(1-Alpha/2) + t.Quantile(Power)) * cvPct * math.Sqrt(1/float64(n1)+1/float64(n2))
}
