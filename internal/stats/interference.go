package stats

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Interference is S0's interference ratio of a target's metric with
// neighbours (x) against the target alone (base), with its interval.
type Interference struct {
	// IR = (mean_x − mean_base) / mean_base, sign-adjusted so that a
	// negative IR is always a degradation: for a lower-is-better metric
	// (latency, seconds) the ratio is negated.
	IR   float64
	CI95 [2]float64
	// Excludes0 is true when the interval lies entirely on one side of 0:
	// the neighbours made a difference beyond trial-to-trial noise.
	Excludes0 bool
	Method    string
}

// BootstrapResamples is how many resamples the interval uses.
const BootstrapResamples = 10000

// InterferenceRatio computes IR and a 95% percentile-bootstrap interval:
// both samples are resampled with replacement (independently, as the trials
// are), IR is recomputed for each resample, and the 2.5th and 97.5th
// percentiles bound it. The seed makes the interval reproducible. ok is
// false when either sample has fewer than 2 values or the baseline mean is 0.
func InterferenceRatio(x, base []float64, lowerIsBetter bool, seed uint64) (Interference, bool) {
	if len(x) < 2 || len(base) < 2 {
		return Interference{}, false
	}
	mb := Summarize(base).Mean
	if mb == 0 || math.IsNaN(mb) {
		return Interference{}, false
	}
	sign := 1.0
	if lowerIsBetter {
		sign = -1
	}
	ir := func(mx, mb float64) float64 { return sign * (mx - mb) / mb }
	out := Interference{IR: ir(Summarize(x).Mean, mb), Method: "percentile bootstrap, 10000 resamples"}
	rng := rand.New(rand.NewPCG(seed, 0x69725f626f6f74)) // "ir_boot"
	mean := func(s []float64) float64 {
		sum := 0.0
		for range s {
			sum += s[rng.IntN(len(s))]
		}
		return sum / float64(len(s))
	}
	reps := make([]float64, 0, BootstrapResamples)
	for i := 0; i < BootstrapResamples; i++ {
		b := mean(base)
		if b == 0 {
			continue
		}
		reps = append(reps, ir(mean(x), b))
	}
	sort.Float64s(reps)
	q := func(p float64) float64 {
		// Nearest rank on the sorted resamples.
		i := int(math.Ceil(p*float64(len(reps)))) - 1
		return reps[max(0, min(len(reps)-1, i))]
	}
	out.CI95 = [2]float64{q(0.025), q(0.975)}
	out.Excludes0 = out.CI95[0] > 0 || out.CI95[1] < 0
	return out, true
}
