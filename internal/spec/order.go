package spec

import "math/rand/v2"

// PlannedTrial is one slot of the run order.
type PlannedTrial struct {
	Seq        int // 1-based position
	CellID     int
	Repetition int // 1-based within the cell, counted separately for warm-ups
	Warmup     bool
}

// Order returns the run order: warm-up rounds first, then one round per
// repetition, each round a seeded random permutation of all cells. Rounds
// interleave the cells so slow drift of the machine spreads over all of them,
// and a cell never runs twice in a row when there are two or more cells.
func Order(cellIDs []int, repetitions, warmup int, seed int64) []PlannedTrial {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x63747262656e6368)) // "ctrbench"
	var out []PlannedTrial
	last := -1
	round := func(rep int, warm bool) {
		perm := append([]int(nil), cellIDs...)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if len(perm) > 1 && perm[0] == last {
			perm[0], perm[1] = perm[1], perm[0]
		}
		for _, id := range perm {
			out = append(out, PlannedTrial{Seq: len(out) + 1, CellID: id, Repetition: rep, Warmup: warm})
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
