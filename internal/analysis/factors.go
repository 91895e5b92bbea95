package analysis

import (
	"sort"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// FactorRank orders factors the way a reader scans a placement: where it
// runs (platform, network), its limits, anything else (neighbours,
// bundles, pairs), the roles' own placements, and workload parameters
// last. Tables order their columns by it and figures their factors.
func FactorRank(name string) int {
	base := name
	role := false
	for _, r := range []string{"server.", "client."} {
		if strings.HasPrefix(name, r) {
			base, role = strings.TrimPrefix(name, r), true
		}
	}
	rank := 5
	for i, f := range []string{vocab.FPlatform, vocab.FNetwork, vocab.FCPUs, vocab.FCpuset, vocab.FMemory} {
		if base == f {
			rank = i
		}
	}
	switch {
	case strings.HasPrefix(name, "param."):
		return 20
	case role:
		return 10 + rank
	}
	return rank
}

// SortFactors orders factor names by FactorRank, then by name.
func SortFactors(names []string) {
	sort.Slice(names, func(i, j int) bool {
		ri, rj := FactorRank(names[i]), FactorRank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
}

// CaseOf names a co-location case (S0's Cases 1-3b) by a cell's levels
// other than its neighbours', in column order: "cpus=1 packaging=same-container".
func CaseOf(cell map[string]string) string {
	var ks []string
	for k := range cell {
		if k != vocab.FNeighbour {
			ks = append(ks, k)
		}
	}
	SortFactors(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k + "=" + cell[k]
	}
	return strings.Join(parts, " ")
}

// Headlines returns, for a co-location campaign's rows, each target
// workload in order of appearance and its headline row: its first metric
// that is neither telemetry nor a neighbour's. S0's matrices, their
// figures and the placement advice judge a target by it.
func Headlines(rows []Row) (targets []string, headline map[string]Row) {
	headline = map[string]Row{}
	for _, r := range rows {
		if !headlineCandidate(r.ID) {
			continue
		}
		if _, ok := headline[r.Workload]; !ok {
			headline[r.Workload] = r
			targets = append(targets, r.Workload)
		}
	}
	return targets, headline
}

// headlineCandidate reports whether a metric can be its workload's
// headline: not telemetry, not a neighbour's.
func headlineCandidate(id result.MetricID) bool {
	return id.Kind != result.KindTelemetry && id.Scope != result.ScopeNeighbour
}
