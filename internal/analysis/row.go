package analysis

import (
	"math"
	"sort"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// Row is one series' statistics: what every format prints. Its JSON field
// names are a contract with scripts that read the output; NaN and Inf
// encode as null.
type Row struct {
	Campaign     string            `json:"campaign"`
	Workload     string            `json:"workload"`
	WorkloadType string            `json:"workload_type"`
	Metric       string            `json:"metric"` // ID as reports print it (MetricID.String)
	ID           result.MetricID   `json:"-"`
	Unit         string            `json:"unit"`
	Better       result.Better     `json:"better"`
	Cell         map[string]string `json:"cell"`
	N            int               `json:"n"`
	Failed       int               `json:"failed"`
	// Flagged counts ok trials whose conditions were not as planned (e.g.
	// antagonists covering under 95% of the window); they are included.
	Flagged          int         `json:"flagged"`
	Mean             float64     `json:"mean"`
	SD               float64     `json:"sd"`
	RSDPct           float64     `json:"rsd_pct"`
	CI95             [2]float64  `json:"ci95"`
	VsBaselinePct    *float64    `json:"vs_baseline_pct"` // nil for the baseline cell and when not computable
	VsBaselineCI95   *[2]float64 `json:"vs_baseline_ci95"`
	PValue           *float64    `json:"p_value"`
	Significant      *bool       `json:"significant"` // the interval excludes 0
	VsBaselineMethod string      `json:"vs_baseline_method,omitempty"`
	Baseline         bool        `json:"baseline"`
	// Interference ratio (S0): (mean − mean_alone)/mean_alone, negated for
	// lower-is-better metrics so that negative is always worse; its 95%
	// interval as for vs_baseline; nil for cells without neighbours.
	IR          *float64    `json:"ir"`
	IRCI95      *[2]float64 `json:"ir_ci95"`
	IRExcludes0 *bool       `json:"ir_excludes_0"`
}

// Rows computes one Row per Series, ordered by workload and metric (each in
// order of first appearance; metrics as SameMetric groups them) and then
// cell ID, so output does not depend on how the series were ordered.
func Rows(series []Series) []Row {
	ordered := orderSeries(series)
	rows := make([]Row, len(ordered))
	for i, s := range ordered {
		rows[i] = row(s)
	}
	return rows
}

// orderSeries orders series as Rows does.
func orderSeries(series []Series) []Series {
	wOrder, mOrder := map[string]int{}, map[result.MetricID]int{}
	type keyed struct {
		w, m, cell int
		s          Series
	}
	ks := make([]keyed, 0, len(series))
	for _, s := range series {
		if _, ok := wOrder[s.Workload]; !ok {
			wOrder[s.Workload] = len(wOrder)
		}
		m := metricKey(s.ID)
		if _, ok := mOrder[m]; !ok {
			mOrder[m] = len(mOrder)
		}
		ks = append(ks, keyed{wOrder[s.Workload], mOrder[m], s.CellID, s})
	}
	sort.SliceStable(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.w != b.w {
			return a.w < b.w
		}
		if a.m != b.m {
			return a.m < b.m
		}
		return a.cell < b.cell
	})
	out := make([]Series, len(ks))
	for i, k := range ks {
		out[i] = k.s
	}
	return out
}

func row(s Series) Row {
	sum := stats.Summarize(s.Values)
	cell := make(map[string]string, len(s.Cell)) // never nil: JSON shows {}
	for k, v := range s.Cell {
		cell[k] = v
	}
	r := Row{
		Campaign: s.Campaign, Workload: s.Workload, WorkloadType: s.WorkloadType,
		Metric: s.ID.String(), ID: s.ID, Unit: s.Unit, Better: s.Better, Cell: cell,
		N: sum.N, Failed: s.Failed, Flagged: s.Flagged,
		Mean: sum.Mean, SD: sum.SD, RSDPct: sum.RSDPct, CI95: sum.CI95,
		Baseline: s.IsBaseline,
	}
	if s.IsBaseline || s.Baseline == nil {
		return r
	}
	if s.Interference {
		if ir, ok := stats.InterferenceRatio(s.Values, s.Baseline, s.Better == result.Lower); ok {
			v, ci, ex := ir.IR, ir.CI95, ir.Excludes0
			r.IR, r.IRCI95, r.IRExcludes0 = &v, &ci, &ex
		}
	}
	c, ok := stats.Compare(s.Values, s.Baseline)
	if !ok || !finite(c.Pct) || !finite(c.CI95[0]) || !finite(c.CI95[1]) {
		return r
	}
	pct, ci := c.Pct, c.CI95
	sig := ci[0] > 0 || ci[1] < 0
	r.VsBaselinePct, r.VsBaselineCI95, r.Significant = &pct, &ci, &sig
	r.VsBaselineMethod = c.Method
	if finite(c.PValue) {
		p := c.PValue
		r.PValue = &p
	}
	return r
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
