package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// A trial distribution of the simulations: a value and the true mean.
type distribution struct {
	name string
	draw func(rng *rand.Rand, cv float64) float64
	mean func(cv float64) float64
}

var (
	normalData = distribution{"normal",
		func(rng *rand.Rand, cv float64) float64 { return 100 * (1 + cv*rng.NormFloat64()) },
		func(float64) float64 { return 100 }}
	// Right-skewed: a gamma of shape 4 (skewness 1) shifted to mean 100 and
	// SD 100·cv, like trials slowed now and then by a busy machine.
	skewedData = distribution{"right-skewed (gamma, skewness 1)",
		func(rng *rand.Rand, cv float64) float64 {
			g := rng.ExpFloat64() + rng.ExpFloat64() + rng.ExpFloat64() + rng.ExpFloat64()
			return 100 * (1 - 2*cv + cv*g/2)
		},
		func(float64) float64 { return 100 }}
	// Lognormal with the same mean and cv (skewness 3cv + cv³).
	lognormalData = distribution{"lognormal",
		func(rng *rand.Rand, cv float64) float64 {
			s := math.Sqrt(math.Log1p(cv * cv))
			return 100 * math.Exp(s*rng.NormFloat64()-s*s/2)
		},
		func(float64) float64 { return 100 }}
	// A heavy right tail: an exponential shifted to mean 100 and SD 100·cv
	// (skewness 2), where even a fixed 3 trials' t interval covers 0.88.
	heavyTailData = distribution{"heavy tail (exponential, skewness 2)",
		func(rng *rand.Rand, cv float64) float64 { return 100 * (1 - cv + cv*rng.ExpFloat64()) },
		func(float64) float64 { return 100 }}
	// Stalling: normal trials, and one in ten 20% slower (the true mean is
	// 2% above the usual trial).
	stallingData = distribution{"stalling (+20% in 10% of trials)",
		func(rng *rand.Rand, cv float64) float64 {
			x := 100 * (1 + cv*rng.NormFloat64())
			if rng.Float64() < 0.1 {
				x *= 1.2
			}
			return x
		},
		func(float64) float64 { return 102 }}
)

// steinOutcome is what a simulation of two identical adaptive cells found.
type steinOutcome struct {
	coverage  float64 // the first cell's 95% interval holds the true mean
	falseStar float64 // the comparison of the two calls them different
	biasPct   float64 // the first cell's mean against the truth, percent
	meanN     float64 // trials per cell
}

// simulateStein runs the real schedule (NewAdaptive, Stein's rule) on two
// cells whose trials come from the same distribution, sims times, and
// judges each outcome as a report does: the first stage the analysis finds
// (stats.FirstStage of the trials' repetitions), the cell's interval
// (stats.SummarizeSample) and the comparison of the two cells
// (stats.CompareSamples).
func simulateStein(d distribution, cv, rci float64, min, max, sims int, seed uint64) steinOutcome {
	rng := rand.New(rand.NewPCG(seed, 24))
	dec := func(o result.Observation) bool { return o.Metric == "x" }
	var out steinOutcome
	truth := d.mean(cv)
	for i := range sims {
		s := NewAdaptive(AdaptiveConfig{Cells: []int{1, 2}, Min: min, Max: max, RCI: rci, Seed: int64(i),
			Decides: map[int]Decider{1: dec, 2: dec}})
		var samples [2]stats.Sample
		var reps [2][]int
		for {
			pt, ok := s.Next()
			if !ok {
				break
			}
			v := d.draw(rng, cv)
			t0 := time.Unix(int64(pt.Seq), 0)
			s.Observe(result.Trial{Seq: pt.Seq, CellID: pt.CellID, Repetition: pt.Repetition, Status: result.OK,
				Started: t0, Ended: t0, Observations: []result.Observation{{Metric: "x", Value: v}}})
			c := pt.CellID - 1
			samples[c].Values = append(samples[c].Values, v)
			reps[c] = append(reps[c], pt.Repetition)
		}
		for c := range samples {
			samples[c].Stage = stats.FirstStage(reps[c], min)
			samples[c].Range = stats.NonNegative
		}
		sum := stats.SummarizeSample(samples[0])
		if sum.CI95[0] <= truth && truth <= sum.CI95[1] {
			out.coverage++
		}
		out.biasPct += 100 * (sum.Mean - truth) / truth
		out.meanN += float64(sum.N)
		if c, ok := stats.CompareSamples(samples[1], samples[0]); ok && c.Significant {
			out.falseStar++
		}
	}
	n := float64(sims)
	return steinOutcome{out.coverage / n, out.falseStar / n, out.biasPct / n, out.meanN / n}
}

// fixedCoverage is the coverage of the t interval of a fixed n trials.
func fixedCoverage(d distribution, cv float64, n, sims int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 25))
	hit := 0
	xs := make([]float64, n)
	for range sims {
		for i := range xs {
			xs[i] = d.draw(rng, cv)
		}
		s := stats.SummarizeSample(stats.Sample{Values: xs, Range: stats.NonNegative})
		if truth := d.mean(cv); s.CI95[0] <= truth && truth <= s.CI95[1] {
			hit++
		}
	}
	return float64(hit) / float64(sims)
}

// Issue 24: the old stopping rule (stop when the interval first looks
// narrow enough) covered the mean 0.79–0.88 of the time on right-skewed
// data, biased it 0.24–0.59% low, and called two identical cells different
// 0.106–0.123 of the time on normal data (0.16–0.23 right-skewed), where a
// fixed n gives 0.047. Stein's rule, judged as the report judges it, at
// the audit's setting (min 3, max 30, rci 2%), 20 000 seeded campaigns of
// two identical cells per row. The figures docs/reports.md gives are
// these rows' logs.
func TestSteinTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	const sims = 20000
	for i, c := range []struct {
		d          distribution
		cv         float64
		min        int
		cover      float64 // at least
		falseStar  float64 // at most
		fixedFloor bool    // coverage: at least a fixed design of min trials' (less 0.01), instead of cover
	}{
		{normalData, 0.02, 3, 0.93, 0.06, false},
		{normalData, 0.05, 3, 0.93, 0.06, false},
		{skewedData, 0.02, 3, 0.90, 0.06, false},
		{skewedData, 0.05, 3, 0.90, 0.06, false},
		{lognormalData, 0.05, 3, 0.90, 0.06, false},
		{heavyTailData, 0.02, 3, 0, 0.07, true},
		{heavyTailData, 0.05, 3, 0, 0.07, true},
		{stallingData, 0.02, 3, 0.82, 0.06, false},
		{stallingData, 0.02, 25, 0.90, 0.06, false},
	} {
		t.Run(fmt.Sprintf("%s cv %g min %d", c.d.name, c.cv, c.min), func(t *testing.T) {
			t.Parallel()
			o := simulateStein(c.d, c.cv, 0.02, c.min, max(30, c.min), sims, uint64(i+1))
			fixed := fixedCoverage(c.d, c.cv, c.min, sims, uint64(i+1))
			t.Logf("coverage %.3f (a fixed %d trials: %.3f), false * %.3f, bias of the mean %+.3f%%, %.1f trials per cell",
				o.coverage, c.min, fixed, o.falseStar, o.biasPct, o.meanN)
			want := c.cover
			if c.fixedFloor {
				want = fixed - 0.01
			}
			if o.coverage < want {
				t.Errorf("coverage %.3f, want at least %.3f", o.coverage, want)
			}
			if o.falseStar > c.falseStar {
				t.Errorf("false * between identical cells %.3f, want at most %.2f", o.falseStar, c.falseStar)
			}
		})
	}
}
