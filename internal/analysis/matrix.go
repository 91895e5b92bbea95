package analysis

import (
	"github.com/ctrbench/ctrbench/internal/workload"
)

// MatrixMetrics returns, for a co-location campaign's rows, each target
// workload in order of appearance (as Headlines) and the metrics S0's
// matrices show of it, each as its first row: the headline first, then
// the others its type lists in workload.Spec.MatrixMetrics (STREAM's four
// kernels, as S0's Table IV), in that order, those the rows have. A
// type that lists none, or is not registered, shows its headline alone.
// The placement advice judges by the headline only (Headlines).
func MatrixMetrics(rows []Row) (targets []string, metrics map[string][]Row) {
	targets, headline := Headlines(rows)
	type key struct {
		workload, metric string
	}
	first := map[key]Row{}
	for _, r := range rows {
		k := key{r.Workload, r.ID.Metric}
		if _, ok := first[k]; ok || !SameMetric(r.ID, declared(workload.Metric{Name: r.ID.Metric})) {
			continue
		}
		first[k] = r
	}
	metrics = map[string][]Row{}
	for _, t := range targets {
		h := headline[t]
		metrics[t] = []Row{h}
		ws, ok := workload.Lookup(h.WorkloadType)
		if !ok {
			continue
		}
		for _, name := range ws.MatrixMetrics() {
			r, ok := first[key{t, name}]
			if ok && !SameMetric(r.ID, h.ID) {
				metrics[t] = append(metrics[t], r)
			}
		}
	}
	return targets, metrics
}

// MatrixRank says which of its target's matrix metrics (MatrixMetrics) a
// row is of: 0 for the headline, 1 for the next, and so on; false for a
// row of no matrix.
func MatrixRank(metrics map[string][]Row, r Row) (int, bool) {
	for i, m := range metrics[r.Workload] {
		if SameMetric(m.ID, r.ID) {
			return i, true
		}
	}
	return 0, false
}
