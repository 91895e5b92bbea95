package schedule

import (
	"github.com/ctrbench/ctrbench/internal/result"
	"reflect"
	"sort"
	"testing"
)

func ids(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// checkOrder checks every property of a run order.
func checkOrder(t *testing.T, plan []Trial, cells []int, reps, warmup int, seed int64) {
	t.Helper()
	n := len(cells)
	if len(plan) != n*(reps+warmup) {
		t.Fatalf("seed %d, %d cells, %d reps, %d warm-ups: %d trials, want %d", seed, n, reps, warmup, len(plan), n*(reps+warmup))
	}
	warmCount, recCount := map[int]int{}, map[int]int{}
	for i, pt := range plan {
		if pt.Seq != i+1 {
			t.Fatalf("seed %d: trial %d has Seq %d", seed, i, pt.Seq)
		}
		if pt.Warmup != (i < n*warmup) {
			t.Fatalf("seed %d: trial %d Warmup=%v; warm-ups must all come first", seed, pt.Seq, pt.Warmup)
		}
		if i > 0 && n > 1 && pt.CellID == plan[i-1].CellID {
			t.Fatalf("seed %d, %d cells: cell %d runs twice in a row at Seq %d", seed, n, pt.CellID, pt.Seq)
		}
		// Rounds: the r-th block of n trials is repetition r of every cell.
		round := i/n + 1
		if !pt.Warmup {
			round -= warmup
		}
		if pt.Repetition != round {
			t.Fatalf("seed %d: Seq %d has repetition %d, want %d", seed, pt.Seq, pt.Repetition, round)
		}
		if pt.Warmup {
			warmCount[pt.CellID]++
		} else {
			recCount[pt.CellID]++
		}
	}
	for _, id := range cells {
		if warmCount[id] != warmup || recCount[id] != reps {
			t.Fatalf("seed %d: cell %d has %d warm-ups and %d trials, want %d and %d", seed, id, warmCount[id], recCount[id], warmup, reps)
		}
	}
	// Each round is a permutation of the cells.
	want := append([]int(nil), cells...)
	sort.Ints(want)
	for r := 0; r < reps+warmup; r++ {
		var got []int
		for _, pt := range plan[r*n : (r+1)*n] {
			got = append(got, pt.CellID)
		}
		sort.Ints(got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: round %d is %v, not a permutation of %v", seed, r+1, got, want)
		}
	}
}

func TestOrderProperties(t *testing.T) {
	for seed := int64(0); seed < 500; seed++ {
		for n := 2; n <= 6; n++ {
			for reps := 1; reps <= 5; reps++ {
				warmup := int(seed % 3)
				checkOrder(t, Order(ids(n), reps, warmup, seed), ids(n), reps, warmup, seed)
			}
		}
	}
}

func TestOrderCellIDsNotContiguous(t *testing.T) {
	cells := []int{7, 3, 12}
	for seed := int64(0); seed < 100; seed++ {
		checkOrder(t, Order(cells, 4, 1, seed), cells, 4, 1, seed)
	}
}

func TestOrderSingleCell(t *testing.T) {
	plan := Order([]int{5}, 3, 2, 1)
	checkOrder(t, plan, []int{5}, 3, 2, 1)
	want := []Trial{
		{1, 5, 1, true}, {2, 5, 2, true},
		{3, 5, 1, false}, {4, 5, 2, false}, {5, 5, 3, false},
	}
	if !reflect.DeepEqual(plan, want) {
		t.Errorf("single cell: %+v\nwant %+v", plan, want)
	}
}

func TestOrderEmpty(t *testing.T) {
	if plan := Order(nil, 3, 1, 1); len(plan) != 0 {
		t.Errorf("no cells: %v", plan)
	}
	if plan := Order(ids(3), 0, 0, 1); len(plan) != 0 {
		t.Errorf("no repetitions: %v", plan)
	}
}

func TestOrderSeeded(t *testing.T) {
	cells := ids(6)
	a := Order(cells, 5, 1, 42)
	if b := Order(cells, 5, 1, 42); !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different orders")
	}
	if c := Order(cells, 5, 1, 43); reflect.DeepEqual(a, c) {
		t.Errorf("seeds 42 and 43 give the same order")
	}
	// Across many seeds the first trial is not always the same cell, and
	// rounds are not all in cell order: the order is really shuffled.
	first := map[int]bool{}
	sortedRounds := 0
	for seed := int64(0); seed < 200; seed++ {
		plan := Order(cells, 1, 0, seed)
		first[plan[0].CellID] = true
		if sort.SliceIsSorted(plan, func(i, j int) bool { return plan[i].CellID < plan[j].CellID }) {
			sortedRounds++
		}
	}
	if len(first) != len(cells) {
		t.Errorf("over 200 seeds only cells %v came first", first)
	}
	if sortedRounds > 5 {
		t.Errorf("%d of 200 rounds are in cell order", sortedRounds)
	}
	// The caller's slice is not reordered.
	if !reflect.DeepEqual(cells, ids(6)) {
		t.Errorf("Order changed its argument: %v", cells)
	}
}

// Resuming replays the recorded trials: the schedule goes on with the
// first planned trial not recorded, whatever happened to the others, and
// ends when every planned trial is recorded.
func TestInterleavedReplays(t *testing.T) {
	s := NewInterleaved(ids(3), 2, 1, 7)
	plan := s.Plan()
	if s.Bound() != 9 || len(plan) != 9 {
		t.Fatalf("bound %d, plan %d", s.Bound(), len(plan))
	}
	for _, seq := range []int{1, 2, 3, 5} { // 4 was cut short by Ctrl-C
		s.Observe(result.Trial{Seq: seq, Status: result.Failed})
	}
	var ran []int
	for {
		tr, ok := s.Next()
		if !ok {
			break
		}
		ran = append(ran, tr.Seq)
		if tr != plan[tr.Seq-1] {
			t.Fatalf("next %+v is not the planned %+v", tr, plan[tr.Seq-1])
		}
		s.Observe(result.Trial{Seq: tr.Seq, Status: result.OK})
	}
	if !reflect.DeepEqual(ran, []int{4, 6, 7, 8, 9}) {
		t.Errorf("ran %v, want 4 6 7 8 9", ran)
	}
	// A scheduler told nothing runs the plan in order.
	fresh := NewInterleaved(ids(3), 2, 1, 7)
	if tr, ok := fresh.Next(); !ok || tr != plan[0] {
		t.Errorf("first %+v %v", tr, ok)
	}
}
