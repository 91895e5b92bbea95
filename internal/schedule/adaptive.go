package schedule

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// Adaptive runs warm-up rounds and Min rounds of every cell, as
// Interleaved does, then more rounds — each a seeded random permutation of
// the cells that still need trials — until every cell has the number of
// usable trials Stein's two-stage rule asks of its deciding metric
// (Needs), or Max recorded trials, or the trials have taken the budget. A
// round is decided when it begins, from the trials run before it, so
// replaying the stored trials of an interrupted campaign takes the same
// decisions.
type Adaptive struct {
	cells          []int
	warmup         int
	min, max       int
	rci            float64
	budget         time.Duration
	decides        map[int]Decider
	seed           uint64
	rng            *rand.Rand
	rounds         [][]Trial
	roundStart     []int // first seq of each round
	done           map[int]bool
	recorded       []result.Trial // in the order observed
	last, nextSeq  int
	stoppedBudget  bool
	warm, measured int // rounds generated of each kind
}

// Decider picks a cell's deciding value out of a trial's observations.
type Decider func(result.Observation) bool

// AdaptiveConfig configures NewAdaptive.
type AdaptiveConfig struct {
	Cells            []int
	Warmup, Min, Max int
	RCI              float64       // target half-width of the 95% interval, relative to the mean
	Budget           time.Duration // 0: none
	Seed             int64
	// Decides says, per cell, which observation decides its precision.
	Decides map[int]Decider
}

var _ Scheduler = (*Adaptive)(nil)

// NewAdaptive makes the adaptive schedule.
func NewAdaptive(c AdaptiveConfig) *Adaptive {
	return &Adaptive{
		cells: slices.Clone(c.Cells), warmup: c.Warmup, min: c.Min, max: c.Max, rci: c.RCI, budget: c.Budget,
		decides: c.Decides, seed: uint64(c.Seed), rng: rand.New(rand.NewPCG(uint64(c.Seed), 0x63747262656e6368)),
		done: map[int]bool{}, nextSeq: 1, last: -1,
	}
}

// Observe implements Scheduler.
func (s *Adaptive) Observe(t result.Trial) {
	if !s.done[t.Seq] {
		s.done[t.Seq] = true
		s.recorded = append(s.recorded, t)
	}
}

// Bound implements Scheduler: every cell at its maximum.
func (s *Adaptive) Bound() int { return len(s.cells) * (s.warmup + s.max) }

// Next implements Scheduler.
func (s *Adaptive) Next() (Trial, bool) {
	for {
		if n := len(s.rounds); n > 0 {
			for _, t := range s.rounds[n-1] {
				if !s.done[t.Seq] {
					return t, true
				}
			}
		}
		if !s.round() {
			return Trial{}, false
		}
	}
}

// StoppedByBudget reports whether the budget ended the campaign.
func (s *Adaptive) StoppedByBudget() bool { return s.stoppedBudget }

// round generates the next round from the trials run before it; false
// when the campaign is complete.
func (s *Adaptive) round() bool {
	var cells []int
	warm := s.warm < s.warmup
	switch {
	case warm:
		cells = slices.Clone(s.cells)
		s.warm++
	case s.measured < s.min:
		cells = slices.Clone(s.cells)
		s.measured++
	default:
		if s.budget > 0 && s.spent(s.nextSeq) >= s.budget {
			s.stoppedBudget = true
			return false
		}
		for _, c := range s.cells {
			if vals, reps, n := s.values(c, s.nextSeq); n < s.max && len(vals) < Needs(vals, reps, s.min, s.rci, s.max) {
				cells = append(cells, c)
			}
		}
		if len(cells) == 0 {
			return false
		}
		s.measured++
	}
	s.rng.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
	if len(cells) > 1 && cells[0] == s.last {
		cells[0], cells[1] = cells[1], cells[0]
	}
	var r []Trial
	for _, c := range cells {
		rep := s.warm
		if !warm {
			_, _, rep = s.values(c, s.nextSeq)
			rep++
		}
		r = append(r, Trial{Seq: s.nextSeq, CellID: c, Repetition: rep, Warmup: warm})
		s.nextSeq++
	}
	s.last = cells[len(cells)-1]
	s.rounds = append(s.rounds, r)
	s.roundStart = append(s.roundStart, r[0].Seq)
	return true
}

// values are a cell's deciding values from usable trials before seq (ok
// and not flagged: a trial whose conditions were not as planned is set
// apart from the statistics, so it decides nothing), their repetition
// numbers, and how many recorded trials (any status) it had then,
// warm-ups apart.
func (s *Adaptive) values(cell, before int) (vals []float64, reps []int, n int) {
	for _, t := range s.recorded {
		if t.CellID != cell || t.Warmup || t.Seq >= before {
			continue
		}
		n++
		if t.Status != result.OK || t.Flags != "" {
			continue
		}
		for _, o := range t.Observations {
			if d := s.decides[cell]; d != nil && d(o) {
				vals = append(vals, o.Value)
				reps = append(reps, t.Repetition)
				break
			}
		}
	}
	return vals, reps, n
}

// spent is the time the trials before seq took.
func (s *Adaptive) spent(before int) time.Duration {
	var d time.Duration
	for _, t := range s.recorded {
		if t.Seq < before {
			d += t.Ended.Sub(t.Started)
		}
	}
	return d
}

// Needs is the stopping rule: the number of usable values a cell needs in
// all, given the values it has (in run order) and their repetition
// numbers. Stein's two-stage rule (Stein 1945): the first stage is the
// values of the first min repetitions (stats.FirstStage); from their mean
// m₀ and standard deviation s₀ it fixes, once,
//
//	N = max(n₀, ⌈(t(0.975, n₀−1) · s₀ / (rci · |m₀|))²⌉)
//
// (stats.SteinN), and the report's interval at the end takes its variance
// and degrees of freedom from the first stage alone. Because N depends on
// nothing but the first stage, the interval keeps its level whenever the
// cell stopped — unlike checking the interval after every round, which
// stops when it happens to look narrow (issue 24: coverage 0.79–0.88 on
// right-skewed data, twice the false differences). Until the first stage
// has two usable values, and when its mean is 0, the cell needs max.
func Needs(vals []float64, reps []int, min int, rci float64, max int) int {
	stage := stats.FirstStage(reps, min)
	if stage == 0 {
		return max
	}
	n := stats.SteinN(vals[:stage], rci)
	if n == 0 {
		return max
	}
	return n
}

// Preview is the order of the rounds that do not depend on results: the
// warm-ups and the minimum; later rounds are decided as results come.
func (s *Adaptive) Preview() []Trial {
	p := NewAdaptive(AdaptiveConfig{Cells: s.cells, Warmup: s.warmup, Min: s.min, Max: s.max, RCI: s.rci})
	p.rng = rand.New(rand.NewPCG(s.seed, 0x63747262656e6368))
	var out []Trial
	for p.warm < p.warmup || p.measured < p.min {
		if !p.round() {
			break
		}
		out = append(out, p.rounds[len(p.rounds)-1]...)
	}
	return out
}
