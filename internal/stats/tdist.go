package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of
// freedom; df need not be an integer (Welch–Satterthwaite gives fractions).
func tQuantile975(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
}

// twoSidedP is the two-sided p-value of statistic t under Student's t with
// df degrees of freedom. Survival keeps precision in the far tail, where
// 1-CDF would round to 0.
func twoSidedP(t, df float64) float64 {
	p := 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
	return math.Min(p, 1)
}

// welchDF is the Welch–Satterthwaite degrees of freedom of the sum of two
// variance terms a and b estimated from na and nb values.
func welchDF(a float64, na int, b float64, nb int) float64 {
	return (a + b) * (a + b) / (a*a/float64(na-1) + b*b/float64(nb-1))
}
