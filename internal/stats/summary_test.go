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

// Issue 24: intervals outside what a metric can be. Two trials of a rate
// (n = 2 on a swarm: transactions/s "[−13150, 45990]"), Jain's index over
// 1 and a max/min ratio below 1 (boeira-netscale's 50-pair cell: 0.719
// [0.125, 1.313] and 7.9 [−6.2, 22.0]) now stay inside their ranges, on
// the log or logit scale; for small variation they agree with Student's.
func TestSummarizeInRange(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name string
		xs   []float64
		r    Range
	}{
		{"rate, n = 2", []float64{14000, 18840}, NonNegative},
		{"jain", []float64{0.45, 0.98, 0.73}, Range{0, 1}},
		{"max/min", []float64{2.1, 14.5, 7.1}, Range{1, inf}},
		{"percent near 100", []float64{99.9, 96, 99.99}, Range{0, 100}},
	} {
		s := SummarizeSample(Sample{Values: c.xs, Range: c.r})
		plain := Summarize(c.xs)
		if !(plain.CI95[0] < c.r.Lo || plain.CI95[1] > c.r.Hi) {
			t.Errorf("%s: Student's interval %v was already inside [%g, %g]: not the case the test is for", c.name, plain.CI95, c.r.Lo, c.r.Hi)
		}
		if s.CI95[0] < c.r.Lo || s.CI95[1] > c.r.Hi || !(s.CI95[0] < s.Mean && s.Mean < s.CI95[1]) {
			t.Errorf("%s: interval %v of mean %g leaves [%g, %g]", c.name, s.CI95, s.Mean, c.r.Lo, c.r.Hi)
		}
	}
	// Small variation: the log-scale interval is Student's to 0.1%.
	xs := []float64{100, 101, 99, 100.5, 99.5}
	s, plain := SummarizeSample(Sample{Values: xs, Range: NonNegative}), Summarize(xs)
	for i := range 2 {
		checkClose(t, "log-scale end", s.CI95[i], plain.CI95[i], 1e-3)
	}
	// A value outside the declared range: the range was wrong, Student's.
	bad := []float64{-1, 2, 3}
	if got, want := SummarizeSample(Sample{Values: bad, Range: NonNegative}).CI95, Summarize(bad).CI95; got != want {
		t.Errorf("out of range: %v, want Student's %v", got, want)
	}
}

// A two-stage sample's interval: Stein's, t(n₀−1)·s₀/√N from the first
// stage, or Student's of all values where that is wider. Worked by hand:
// first stage {98, 100, 102} (s₀ = 2), then 9 more values of 100: N = 12,
// mean 100, Stein half = 4.3027·2/√12 = 2.4842; all values' SD is
// √(8/11) = 0.8528, Student half = 2.2010·0.8528/√12 = 0.5418: Stein's.
func TestSummarizeTwoStage(t *testing.T) {
	xs := []float64{98, 100, 102, 100, 100, 100, 100, 100, 100, 100, 100, 100}
	s := SummarizeSample(Sample{Values: xs, Stage: 3})
	checkClose(t, "half", s.CI95[1]-s.Mean, t975df2*2/math.Sqrt(12), 1e-9)
	if s.Stage != 3 {
		t.Errorf("stage %d", s.Stage)
	}
	// A first stage that missed a stall: all values' interval is wider.
	ys := []float64{100, 100.1, 99.9, 100, 120, 100, 121, 100}
	st := SummarizeSample(Sample{Values: ys, Stage: 3})
	all := Summarize(ys)
	if st.CI95 != all.CI95 {
		t.Errorf("two-stage %v, want Student's of all values %v (wider than Stein's)", st.CI95, all.CI95)
	}
}
