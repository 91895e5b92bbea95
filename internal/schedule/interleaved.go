package schedule

import (
	"math/rand/v2"

	"github.com/ctrbench/ctrbench/internal/result"
)

// Interleaved is the seeded interleaved schedule: Order's trials, each
// run unless it was recorded already.
type Interleaved struct {
	plan []Trial
	done map[int]bool
	next int // plan[:next] are recorded
}

var _ Planner = (*Interleaved)(nil)

// NewInterleaved schedules cellIDs as Order does.
func NewInterleaved(cellIDs []int, repetitions, warmup int, seed int64) *Interleaved {
	return &Interleaved{plan: Order(cellIDs, repetitions, warmup, seed), done: map[int]bool{}}
}

// Observe implements Scheduler.
func (s *Interleaved) Observe(t result.Trial) { s.done[t.Seq] = true }

// Next implements Scheduler: the first planned trial not yet recorded.
func (s *Interleaved) Next() (Trial, bool) {
	for s.next < len(s.plan) && s.done[s.plan[s.next].Seq] {
		s.next++
	}
	if s.next == len(s.plan) {
		return Trial{}, false
	}
	return s.plan[s.next], true
}

// Bound implements Scheduler.
func (s *Interleaved) Bound() int { return len(s.plan) }

// Plan implements Planner.
func (s *Interleaved) Plan() []Trial { return s.plan }

// Order returns the run order: warm-up rounds first, then one round per
// repetition, each round a seeded random permutation of all cells. Rounds
// interleave the cells so slow drift of the machine spreads over all of them,
// and a cell never runs twice in a row when there are two or more cells.
func Order(cellIDs []int, repetitions, warmup int, seed int64) []Trial {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x63747262656e6368)) // "ctrbench"
	var out []Trial
	last := -1
	round := func(rep int, warm bool) {
		perm := append([]int(nil), cellIDs...)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if len(perm) > 1 && perm[0] == last {
			perm[0], perm[1] = perm[1], perm[0]
		}
		for _, id := range perm {
			out = append(out, Trial{Seq: len(out) + 1, CellID: id, Repetition: rep, Warmup: warm})
		}
		if len(perm) > 0 {
			last = perm[len(perm)-1]
		}
	}
	for r := 1; r <= warmup; r++ {
		round(r, true)
	}
	for r := 1; r <= repetitions; r++ {
		round(r, false)
	}
	return out
}
