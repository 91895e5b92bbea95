package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSummarize(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		xs   []float64
		want Summary
	}{
		{"empty", nil, Summary{N: 0, Mean: nan, SD: nan, RSDPct: nan, CI95: [2]float64{nan, nan}}},
		{"one", []float64{3}, Summary{N: 1, Mean: 3, SD: nan, RSDPct: nan, CI95: [2]float64{nan, nan}}},
		// mean 5; squared deviations 9,1,1,1,0,0,4,16 sum to 32; var 32/7;
		// SD sqrt(32/7) = 2.1380899352993950; RSD 42.76...%;
		// half width t(.975,7)*SD/sqrt(8) = t*sqrt(4/7) = 1.7874879182362109.
		{"textbook", []float64{2, 4, 4, 4, 5, 5, 7, 9}, Summary{N: 8, Mean: 5, SD: math.Sqrt(32.0 / 7), RSDPct: 100 * math.Sqrt(32.0/7) / 5, CI95: [2]float64{5 - t975df7*math.Sqrt(4.0/7), 5 + t975df7*math.Sqrt(4.0/7)}}},
		// mean 12, var (4+0+4)/2 = 4, SD 2, half t(.975,2)*2/sqrt(3).
		{"three", []float64{10, 12, 14}, Summary{N: 3, Mean: 12, SD: 2, RSDPct: 100 * 2.0 / 12, CI95: [2]float64{12 - t975df2*2/math.Sqrt(3), 12 + t975df2*2/math.Sqrt(3)}}},
		// Negative mean: RSD uses |mean|.
		{"negative", []float64{-10, -12, -14}, Summary{N: 3, Mean: -12, SD: 2, RSDPct: 100 * 2.0 / 12, CI95: [2]float64{-12 - t975df2*2/math.Sqrt(3), -12 + t975df2*2/math.Sqrt(3)}}},
		// Zero mean: RSD is undefined.
		{"zero mean", []float64{-1, 1}, Summary{N: 2, Mean: 0, SD: math.Sqrt2, RSDPct: nan, CI95: [2]float64{-12.706204736174705, 12.706204736174705}}},
		{"constant", []float64{7, 7, 7}, Summary{N: 3, Mean: 7, SD: 0, RSDPct: 0, CI95: [2]float64{7, 7}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.xs)
			if got.N != tc.want.N {
				t.Errorf("N = %d, want %d", got.N, tc.want.N)
			}
			checkClose(t, "Mean", got.Mean, tc.want.Mean, 1e-9)
			checkClose(t, "SD", got.SD, tc.want.SD, 1e-9)
			checkClose(t, "RSDPct", got.RSDPct, tc.want.RSDPct, 1e-9)
			checkClose(t, "CI95[0]", got.CI95[0], tc.want.CI95[0], 1e-9)
			checkClose(t, "CI95[1]", got.CI95[1], tc.want.CI95[1], 1e-9)
		})
	}
}

// twoPass is the textbook mean then sum of squared deviations, accurate
// for well-scaled data and independent of Welford's recurrence.
func twoPass(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

func TestSummarizeMatchesTwoPass(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2, 5, 30, 1000} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = 100 + 15*r.NormFloat64()
		}
		mean, sd := twoPass(xs)
		got := Summarize(xs)
		checkClose(t, "Mean", got.Mean, mean, 1e-12)
		checkClose(t, "SD", got.SD, sd, 1e-9)
		half := tQuantile975(float64(n-1)) * sd / math.Sqrt(float64(n))
		checkClose(t, "CI95[0]", got.CI95[0], mean-half, 1e-9)
		checkClose(t, "CI95[1]", got.CI95[1], mean+half, 1e-9)
	}
}

// Values near 1e9 with offsets 4,7,13,16: mean 1e9+10, squared deviations
// 36,9,9,36, variance 90/3 = 30. Sum-of-squares loses it because the
// squares (~1e18) are spaced 128 apart in float64.
func TestSummarizeLargeOffset(t *testing.T) {
	xs := []float64{1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	naive := (sq - sum*sum/4) / 3
	if relClose(naive, 30, 1e-3) {
		t.Fatalf("naive variance %g is right; the case no longer tests cancellation", naive)
	}
	got := Summarize(xs)
	checkClose(t, "Mean", got.Mean, 1e9+10, 1e-15)
	checkClose(t, "SD", got.SD, math.Sqrt(30), 1e-9)
}
