package analysis

import (
	"slices"

	"github.com/ctrbench/ctrbench/internal/result"
)

// SettingDifference is a factor that is a setting of each campaign — one
// level in every cell of a workload, or in none of them — whose level
// differs between the two (cpus=0.5 in B, not a factor of A: the same
// file run with --set 'factors.cpus=[0.5]'). A setting is not part of a
// cell's identity: the cells are matched on their other factors, and the
// difference is shown beside them, as an environment difference is.
type SettingDifference struct {
	Factor string
	// A and B are its level throughout each campaign; "" where it is not
	// a factor of that campaign's cells.
	A, B string
	// Workloads are those whose cells it was set aside from, in A's order.
	Workloads []string
}

// settings are the factors set aside from each workload's cells when two
// campaigns' cells are matched.
type settings struct {
	drop  map[string]map[string]bool // workload -> factors
	diffs []SettingDifference
}

// settingsOf finds, for each workload both campaigns ran, the factors
// whose level is one throughout each campaign's cells of it (absent
// throughout counts as one) and differs between them.
func settingsOf(a, b []Series) settings {
	cellsA, order := cellsByWorkload(a)
	cellsB, _ := cellsByWorkload(b)
	out := settings{drop: map[string]map[string]bool{}}
	for _, w := range order {
		if len(cellsB[w]) == 0 {
			continue
		}
		for _, f := range factorNames(cellsA[w], cellsB[w]) {
			la, okA := onlyLevel(cellsA[w], f)
			lb, okB := onlyLevel(cellsB[w], f)
			if !okA || !okB || la == lb {
				continue
			}
			if out.drop[w] == nil {
				out.drop[w] = map[string]bool{}
			}
			out.drop[w][f] = true
			out.add(SettingDifference{Factor: f, A: la, B: lb}, w)
		}
	}
	return out
}

// add records that workload w's cells differ by d, with every other
// workload's that differ the same way.
func (s *settings) add(d SettingDifference, w string) {
	for i, x := range s.diffs {
		if x.Factor == d.Factor && x.A == d.A && x.B == d.B {
			s.diffs[i].Workloads = append(s.diffs[i].Workloads, w)
			return
		}
	}
	d.Workloads = []string{w}
	s.diffs = append(s.diffs, d)
}

// identity is a series' cell without its workload's settings: what it is
// matched by.
func (s settings) identity(x Series) map[string]string {
	drop := s.drop[x.Workload]
	if len(drop) == 0 {
		return x.Cell
	}
	out := map[string]string{}
	for f, l := range x.Cell {
		if !drop[f] {
			out[f] = l
		}
	}
	return out
}

// key is a series' workload and identity, as compare lists cells.
func (s settings) key(x Series) string {
	return x.Workload + " " + result.FactorString(s.identity(x))
}

// cellsByWorkload is each workload's cells (their factors, one per cell)
// and the workloads in order of appearance.
func cellsByWorkload(series []Series) (map[string][]map[string]string, []string) {
	out := map[string][]map[string]string{}
	var order []string
	seen := map[int]bool{}
	for _, s := range series {
		if seen[s.CellID] {
			continue
		}
		seen[s.CellID] = true
		if _, ok := out[s.Workload]; !ok {
			order = append(order, s.Workload)
		}
		out[s.Workload] = append(out[s.Workload], s.Cell)
	}
	return out, order
}

// factorNames are the factors any of the cells has, in column order.
func factorNames(cells ...[]map[string]string) []string {
	var out []string
	for _, cs := range cells {
		for _, c := range cs {
			for f := range c {
				if !slices.Contains(out, f) {
					out = append(out, f)
				}
			}
		}
	}
	SortFactors(out)
	return out
}

// onlyLevel is factor f's one level throughout cells ("" when no cell
// has it); false when it has several, or only some cells have it.
func onlyLevel(cells []map[string]string, f string) (string, bool) {
	level, present := cells[0][f]
	for _, c := range cells[1:] {
		if l, ok := c[f]; ok != present || l != level {
			return "", false
		}
	}
	return level, true
}

// WorkloadDesign is what a campaign ran of one workload: how many cells,
// and the levels of each of their factors.
type WorkloadDesign struct {
	Workload string
	Cells    int
	Factors  []FactorLevels // in column order
}

// FactorLevels are a factor's levels in a campaign, in its cells' order.
type FactorLevels struct {
	Factor string
	Levels []string
}

// designOf is each workload's design, in order of appearance.
func designOf(series []Series) []WorkloadDesign {
	cells, order := cellsByWorkload(series)
	out := make([]WorkloadDesign, len(order))
	for i, w := range order {
		out[i] = WorkloadDesign{Workload: w, Cells: len(cells[w])}
		for _, f := range factorNames(cells[w]) {
			fl := FactorLevels{Factor: f}
			for _, c := range cells[w] {
				if l, ok := c[f]; ok && !slices.Contains(fl.Levels, l) {
					fl.Levels = append(fl.Levels, l)
				}
			}
			out[i].Factors = append(out[i].Factors, fl)
		}
	}
	return out
}
