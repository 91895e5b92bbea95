package delayline

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The schedule's promises, checked on 200,000 frames 10 µs apart: the
// lost share is within its binomial 99.9% band of Loss, frames leave in
// the order they came, and with jitter far below the frames' spacing
// times Delay's mean and standard deviation come out as asked (within
// 99.9% bands for 200,000 normal draws). With frames closer than the
// jitter, order costs delay: the mean grows, which docs/networks.md says.
func TestScheduleKeepsItsPromises(t *testing.T) {
	const n = 200_000
	const gap = int64(10 * time.Microsecond)
	for _, p := range []Params{
		{Delay: 5 * time.Millisecond, Loss: 0.01},
		{Delay: 5 * time.Millisecond, Jitter: 2 * time.Microsecond},
		{Delay: 50 * time.Millisecond, Jitter: 500 * time.Microsecond, Loss: 0.2},
	} {
		s := &schedule{rnd: rand.New(rand.NewPCG(1, 2))}
		var lost int
		var sum, sumsq float64
		var kept int
		last := int64(-1)
		for i := range n {
			now := int64(i) * gap
			rel, ok := s.release(now, p)
			if !ok {
				lost++
				continue
			}
			if rel < last {
				t.Fatalf("%+v: frame %d leaves at %d, before the frame before it (%d)", p, i, rel, last)
			}
			last = rel
			d := float64(rel - now)
			sum += d
			sumsq += d * d
			kept++
		}
		sd := math.Sqrt(p.Loss * (1 - p.Loss) / n)
		if got := float64(lost) / n; math.Abs(got-p.Loss) > 3.3*sd+1e-12 {
			t.Errorf("%+v: lost %.4f of the frames", p, got)
		}
		mean := sum / float64(kept)
		std := math.Sqrt(sumsq/float64(kept) - mean*mean)
		if p.Jitter*4 <= time.Duration(gap) {
			if tol := 3.3 * float64(p.Jitter) / math.Sqrt(float64(kept)); math.Abs(mean-float64(p.Delay)) > tol+1 {
				t.Errorf("%+v: mean delay %.0f ns, want %d ± %.0f", p, mean, p.Delay, tol)
			}
			if tol := 3.3 * float64(p.Jitter) / math.Sqrt(2*float64(kept)); math.Abs(std-float64(p.Jitter)) > tol+1 {
				t.Errorf("%+v: delay SD %.0f ns, want %d ± %.0f", p, std, p.Jitter, tol)
			}
		} else if mean < float64(p.Delay) {
			t.Errorf("%+v: frames closer than the jitter keep their order by waiting, so the mean (%.0f ns) cannot fall below the delay", p, mean)
		}
	}
}

// Loss 0 loses nothing and a zero delay holds nothing.
func TestScheduleNothingAsked(t *testing.T) {
	s := &schedule{rnd: rand.New(rand.NewPCG(3, 4))}
	for i := range int64(1000) {
		rel, ok := s.release(i*1000, Params{})
		if !ok || rel != i*1000 {
			t.Fatalf("frame %d: release %d ok %v", i, rel, ok)
		}
	}
}
