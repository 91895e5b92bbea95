// Package baseline finds a cell's baseline cell: the rule an experiment
// file's baseline states, applied to the cells of a campaign — when spec
// resolves a file and when analysis reads a stored campaign back (the
// stored baseline needs no file).
package baseline

import (
	"slices"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// Cell returns the ID of cell c's baseline among cells: the cell of the
// same workload whose levels equal c's except where baseline (an
// experiment's, as stored: factor -> level, or vocab.vocab.Previous+":"+the
// factor's levels in order) names a level. ok is false when there is no
// baseline or that cell is not among cells (excluded).
func Cell(baseline map[string]string, c result.Cell, cells []result.Cell) (int, bool) {
	if len(baseline) == 0 {
		return 0, false
	}
	want := map[string]string{}
	for k, v := range c.Factors {
		want[k] = v
	}
	for k, v := range baseline {
		cur, ok := want[k]
		if !ok {
			continue
		}
		if order, ok := strings.CutPrefix(v, vocab.Previous+":"); ok {
			levels := strings.Split(order, ",")
			if i := slices.Index(levels, cur); i > 0 {
				v = levels[i-1]
			} else {
				v = cur
			}
		}
		want[k] = v
	}
	vocab.DropIrrelevant(want)
	// A factor the baseline names may fix others (a bundle's level sets
	// platform and network, an exclusion may tie two factors): those follow
	// it rather than stay as in c.
	determined := map[string]bool{}
	for k := range baseline {
		if want[k] != c.Factors[k] {
			for j := range determinedBy(k, c.Workload, cells) {
				determined[j] = true
			}
		}
	}
	for _, o := range cells {
		if o.Workload == c.Workload && sameExcept(o.Factors, want, determined) {
			return o.ID, true
		}
	}
	return 0, false
}

// matchesExcept is matches, skipping the keys in skip.
// sameExcept reports whether two cells' levels agree — a factor present in
// both with one level, or absent from both — on every factor not in skip.
func sameExcept(a, b map[string]string, skip map[string]bool) bool {
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if skip[k] {
				continue
			}
			av, aok := a[k]
			bv, bok := b[k]
			if aok != bok || av != bv {
				return false
			}
		}
	}
	return true
}

// absentLevel stands for a factor a cell does not have.
const absentLevel = "\x00absent"

// determinedBy lists the factors whose level follows from factor k's among
// a workload's cells: every two cells with the same level of k agree on
// them, and they take more than one level.
func determinedBy(k, workload string, cells []result.Cell) map[string]bool {
	val := map[string]map[string]string{} // k's level -> factor -> level
	levels := map[string]map[string]bool{}
	bad := map[string]bool{}
	// A factor some cells have and others lack (one a bundle's level
	// alone sets) takes "absent" as a level of its own.
	all := map[string]bool{}
	for _, c := range cells {
		if c.Workload == workload {
			for j := range c.Factors {
				all[j] = true
			}
		}
	}
	for _, c := range cells {
		if c.Workload != workload {
			continue
		}
		kv, ok := c.Factors[k]
		if !ok {
			continue
		}
		if val[kv] == nil {
			val[kv] = map[string]string{}
		}
		for j := range all {
			if j == k {
				continue
			}
			v, ok := c.Factors[j]
			if !ok {
				v = absentLevel
			}
			if levels[j] == nil {
				levels[j] = map[string]bool{}
			}
			levels[j][v] = true
			if prev, ok := val[kv][j]; ok && prev != v {
				bad[j] = true
			}
			val[kv][j] = v
		}
	}
	out := map[string]bool{}
	for j, ls := range levels {
		if !bad[j] && len(ls) > 1 {
			out[j] = true
		}
	}
	return out
}
