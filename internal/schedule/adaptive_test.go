package schedule

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// cellNoise gives each cell a coefficient of variation: cell 1 is steady,
// cell 2 noisy, cell 3 noisier.
var cellNoise = map[int]float64{1: 0.002, 2: 0.03, 3: 0.15}

// runAdaptive drives a schedule to the end the way the orchestrator does,
// with trials drawn from each cell's distribution (seeded), and returns the
// trials. cut > 0 stops after that many trials (a kill) and returns early.
func runAdaptive(s *Adaptive, seed uint64, cut int, recorded []result.Trial) []result.Trial {
	rng := rand.New(rand.NewPCG(seed, 9))
	for _, t := range recorded {
		s.Observe(t)
	}
	out := append([]result.Trial(nil), recorded...)
	for {
		pt, ok := s.Next()
		if !ok || cut > 0 && len(out) >= cut {
			return out
		}
		v := 100 * (1 + cellNoise[pt.CellID]*rng.NormFloat64())
		t0 := time.Unix(int64(pt.Seq)*10, 0)
		t := result.Trial{Seq: pt.Seq, CellID: pt.CellID, Repetition: pt.Repetition, Warmup: pt.Warmup, Status: result.OK,
			Started: t0, Ended: t0.Add(time.Second), Observations: []result.Observation{{Metric: "x", Value: v}}}
		s.Observe(t)
		out = append(out, t)
	}
}

func newTestAdaptive(budget time.Duration) *Adaptive {
	dec := func(o result.Observation) bool { return o.Metric == "x" }
	return NewAdaptive(AdaptiveConfig{Cells: []int{1, 2, 3}, Warmup: 1, Min: 3, Max: 20, RCI: 0.02, Budget: budget, Seed: 4,
		Decides: map[int]Decider{1: dec, 2: dec, 3: dec}})
}

func countByCell(trials []result.Trial) map[int]int {
	n := map[int]int{}
	for _, t := range trials {
		if !t.Warmup {
			n[t.CellID]++
		}
	}
	return n
}

// Each cell runs the number of trials Stein's rule fixes from its first
// three (stats.SteinN), capped at the maximum: the steady cell stops at
// the minimum, the noisy one later, the noisiest at the maximum; no cell
// runs twice in a row while another still runs; the numbering is dense.
func TestAdaptiveStopsPerCell(t *testing.T) {
	trials := runAdaptive(newTestAdaptive(0), 1, 0, nil)
	n := countByCell(trials)
	first := map[int][]float64{}
	for _, tr := range trials {
		if !tr.Warmup && len(first[tr.CellID]) < 3 {
			first[tr.CellID] = append(first[tr.CellID], tr.Observations[0].Value)
		}
	}
	for c := 1; c <= 3; c++ {
		if want := min(20, stats.SteinN(first[c], 0.02)); n[c] != want {
			t.Errorf("cell %d ran %d trials, want %d (Stein's N from %v)", c, n[c], want, first[c])
		}
	}
	if n[1] != 3 || n[2] <= 3 || n[2] >= 20 || n[3] != 20 {
		t.Errorf("trials per cell %v: want 3 for the steady cell, between for the noisy, 20 (max) for the noisiest", n)
	}
	lastOther := 0 // the last trial of a cell other than the one that runs last
	for i, tr := range trials {
		if tr.CellID != trials[len(trials)-1].CellID {
			lastOther = i
		}
	}
	for i, tr := range trials {
		if tr.Seq != i+1 {
			t.Fatalf("trial %d has seq %d", i, tr.Seq)
		}
		if i > 0 && i <= lastOther && tr.CellID == trials[i-1].CellID {
			t.Errorf("cell %d twice in a row at seq %d", tr.CellID, tr.Seq)
		}
	}
	if n[1]+n[2]+n[3] >= 3*20*6/10 {
		t.Errorf("%d trials: the adaptive schedule should save at least 40%% of 60", n[1]+n[2]+n[3])
	}
}

// Killed after any number of trials and resumed from what was stored, the
// schedule takes the same decisions: the same trials in the same order.
func TestAdaptiveReplays(t *testing.T) {
	whole := runAdaptive(newTestAdaptive(0), 1, 0, nil)
	for _, cut := range []int{1, 3, 4, 7, 12, len(whole) - 1} {
		first := runAdaptive(newTestAdaptive(0), 1, cut, nil)
		// The resumed run draws values from the same stream: skip those
		// the first part drew, so equal decisions give equal trials.
		resumed := runAdaptiveFrom(newTestAdaptive(0), first, whole)
		if !reflect.DeepEqual(resumed, whole) {
			t.Fatalf("cut at %d: resumed schedule differs", cut)
		}
	}
}

// runAdaptiveFrom resumes after recorded, taking each next trial's value
// from want (the uninterrupted run), and fails loudly if the schedule asks
// for a trial the uninterrupted run did not have.
func runAdaptiveFrom(s *Adaptive, recorded, want []result.Trial) []result.Trial {
	for _, t := range recorded {
		s.Observe(t)
	}
	out := append([]result.Trial(nil), recorded...)
	for {
		pt, ok := s.Next()
		if !ok {
			return out
		}
		if pt.Seq > len(want) {
			return append(out, result.Trial{Seq: pt.Seq, CellID: -1})
		}
		t := want[pt.Seq-1]
		if t.CellID != pt.CellID || t.Repetition != pt.Repetition || t.Warmup != pt.Warmup {
			return append(out, result.Trial{Seq: pt.Seq, CellID: -1})
		}
		s.Observe(t)
		out = append(out, t)
	}
}

// The budget ends the adaptive rounds: the trials (1 s each) stop once
// their time is spent, at a round's end.
func TestAdaptiveBudget(t *testing.T) {
	s := newTestAdaptive(20 * time.Second)
	trials := runAdaptive(s, 1, 0, nil)
	if len(trials) > 20+3 || !s.StoppedByBudget() {
		t.Errorf("%d trials of 1 s with a 20 s budget (stopped by budget: %v)", len(trials), s.StoppedByBudget())
	}
	if n := countByCell(trials); n[1] < 3 || n[2] < 3 || n[3] < 3 {
		t.Errorf("the minimum is run whatever the budget: %v", n)
	}
}
