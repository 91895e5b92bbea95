package stats

import (
	"math"
	"sync/atomic"

	"gonum.org/v1/gonum/stat/distuv"
)

// tQuantile975 is the 0.975 quantile of Student's t with df degrees of
// freedom; df need not be an integer (Welch–Satterthwaite gives fractions).
func tQuantile975(df float64) float64 {
	if df == math.Trunc(df) && df >= 1 && df <= tCacheMax {
		i := int(df)
		if q := t975Cache[i].Load(); q != nil {
			return *q
		}
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
		t975Cache[i].Store(&q)
		return q
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
}

// t975Cache holds the quantile at whole degrees of freedom up to
// tCacheMax: a sample's n − 1, computed once each.
const tCacheMax = 1024

var t975Cache [tCacheMax + 1]atomic.Pointer[float64]

// twoSidedP is the two-sided p-value of statistic t under Student's t with
// df degrees of freedom. Survival keeps precision in the far tail, where
// 1-CDF would round to 0.
func twoSidedP(t, df float64) float64 {
	p := 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
	return math.Min(p, 1)
}

// welchDF is the Welch–Satterthwaite degrees of freedom of the sum of two
// variance terms a and b estimated with dfa and dfb degrees of freedom
// (n − 1 each for plain samples).
func welchDF(a, dfa, b, dfb float64) float64 {
	if a == 0 && b == 0 {
		return dfa + dfb
	}
	return (a + b) * (a + b) / (a*a/dfa + b*b/dfb)
}
