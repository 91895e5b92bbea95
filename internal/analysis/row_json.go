package analysis

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ctrbench/ctrbench/internal/result"
)

// num is a float64 that encodes NaN and ±Inf as null, which encoding/json
// otherwise refuses, and decodes null back to NaN.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	if !finite(float64(n)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

func (n *num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("decode number: %w", err)
	}
	*n = num(f)
	return nil
}

// wireRow is Row as it appears in JSON, field for field in the same order
// (ID is not there: Metric prints it).
type wireRow struct {
	Campaign         string            `json:"campaign"`
	Workload         string            `json:"workload"`
	WorkloadType     string            `json:"workload_type"`
	Metric           string            `json:"metric"`
	Unit             string            `json:"unit"`
	Better           result.Better     `json:"better"`
	Cell             map[string]string `json:"cell"`
	N                int               `json:"n"`
	Failed           int               `json:"failed"`
	Flagged          int               `json:"flagged"`
	Mean             num               `json:"mean"`
	SD               num               `json:"sd"`
	RSDPct           num               `json:"rsd_pct"`
	CI95             [2]num            `json:"ci95"`
	VsBaselinePct    *num              `json:"vs_baseline_pct"`
	VsBaselineCI95   *[2]num           `json:"vs_baseline_ci95"`
	PValue           *num              `json:"p_value"`
	Significant      *bool             `json:"significant"`
	VsBaselineMethod string            `json:"vs_baseline_method,omitempty"`
	Baseline         bool              `json:"baseline"`
	IR               *num              `json:"ir"`
	IRCI95           *[2]num           `json:"ir_ci95"`
	IRExcludes0      *bool             `json:"ir_excludes_0"`
	VsBaselineNote   string            `json:"vs_baseline_note,omitempty"`
	VsBaselineDiff   *num              `json:"vs_baseline_diff,omitempty"`
	VsBaselineDiffCI *[2]num           `json:"vs_baseline_diff_ci95,omitempty"`
	Outliers         []int             `json:"outliers,omitempty"`
	TargetRCIPct     *num              `json:"target_rci_pct,omitempty"`
	RCIPct           *num              `json:"rci_pct,omitempty"`
	Reached          *bool             `json:"target_reached,omitempty"`
	MDEPct           *num              `json:"mde_pct,omitempty"`
	BelowNoiseFloor  *bool             `json:"below_noise_floor,omitempty"`
}

// MarshalJSON encodes r with NaN and Inf as null.
func (r Row) MarshalJSON() ([]byte, error) {
	w := wireRow{
		Campaign: r.Campaign, Workload: r.Workload, WorkloadType: r.WorkloadType,
		Metric: r.Metric, Unit: r.Unit, Better: r.Better, Cell: r.Cell,
		N: r.N, Failed: r.Failed, Flagged: r.Flagged,
		Mean: num(r.Mean), SD: num(r.SD), RSDPct: num(r.RSDPct),
		CI95:        [2]num{num(r.CI95[0]), num(r.CI95[1])},
		Significant: r.Significant, VsBaselineMethod: r.VsBaselineMethod,
		Baseline: r.Baseline,
	}
	if r.VsBaselinePct != nil {
		v := num(*r.VsBaselinePct)
		w.VsBaselinePct = &v
	}
	if r.VsBaselineCI95 != nil {
		v := [2]num{num(r.VsBaselineCI95[0]), num(r.VsBaselineCI95[1])}
		w.VsBaselineCI95 = &v
	}
	if r.PValue != nil {
		v := num(*r.PValue)
		w.PValue = &v
	}
	if r.IR != nil {
		v := num(*r.IR)
		w.IR = &v
	}
	if r.IRCI95 != nil {
		v := [2]num{num(r.IRCI95[0]), num(r.IRCI95[1])}
		w.IRCI95 = &v
	}
	w.IRExcludes0 = r.IRExcludes0
	w.VsBaselineNote, w.Outliers, w.Reached, w.BelowNoiseFloor = r.VsBaselineNote, r.Outliers, r.Reached, r.BelowNoiseFloor
	if r.MDEPct != nil {
		v := num(*r.MDEPct)
		w.MDEPct = &v
	}
	if r.TargetRCIPct != nil {
		v := num(*r.TargetRCIPct)
		w.TargetRCIPct = &v
	}
	if r.RCIPct != nil {
		v := num(*r.RCIPct)
		w.RCIPct = &v
	}
	if r.VsBaselineDiff != nil {
		v := num(*r.VsBaselineDiff)
		w.VsBaselineDiff = &v
	}
	if r.VsBaselineDiffCI95 != nil {
		v := [2]num{num(r.VsBaselineDiffCI95[0]), num(r.VsBaselineDiffCI95[1])}
		w.VsBaselineDiffCI = &v
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON wrote, null numbers becoming NaN,
// so reports can be read back (e.g. to compare two campaigns' outputs). A
// row read back has its Metric but no ID.
func (r *Row) UnmarshalJSON(b []byte) error {
	var w wireRow
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode report row: %w", err)
	}
	*r = Row{
		Campaign: w.Campaign, Workload: w.Workload, WorkloadType: w.WorkloadType,
		Metric: w.Metric, Unit: w.Unit, Better: w.Better, Cell: w.Cell,
		N: w.N, Failed: w.Failed, Flagged: w.Flagged,
		Mean: float64(w.Mean), SD: float64(w.SD), RSDPct: float64(w.RSDPct),
		CI95:        [2]float64{float64(w.CI95[0]), float64(w.CI95[1])},
		Significant: w.Significant, VsBaselineMethod: w.VsBaselineMethod,
		Baseline: w.Baseline,
	}
	if w.VsBaselinePct != nil {
		v := float64(*w.VsBaselinePct)
		r.VsBaselinePct = &v
	}
	if w.VsBaselineCI95 != nil {
		v := [2]float64{float64(w.VsBaselineCI95[0]), float64(w.VsBaselineCI95[1])}
		r.VsBaselineCI95 = &v
	}
	if w.PValue != nil {
		v := float64(*w.PValue)
		r.PValue = &v
	}
	if w.IR != nil {
		v := float64(*w.IR)
		r.IR = &v
	}
	if w.IRCI95 != nil {
		v := [2]float64{float64(w.IRCI95[0]), float64(w.IRCI95[1])}
		r.IRCI95 = &v
	}
	r.IRExcludes0 = w.IRExcludes0
	r.VsBaselineNote, r.Outliers, r.Reached, r.BelowNoiseFloor = w.VsBaselineNote, w.Outliers, w.Reached, w.BelowNoiseFloor
	if w.MDEPct != nil {
		v := float64(*w.MDEPct)
		r.MDEPct = &v
	}
	if w.TargetRCIPct != nil {
		v := float64(*w.TargetRCIPct)
		r.TargetRCIPct = &v
	}
	if w.RCIPct != nil {
		v := float64(*w.RCIPct)
		r.RCIPct = &v
	}
	if w.VsBaselineDiff != nil {
		v := float64(*w.VsBaselineDiff)
		r.VsBaselineDiff = &v
	}
	if w.VsBaselineDiffCI != nil {
		v := [2]float64{float64(w.VsBaselineDiffCI[0]), float64(w.VsBaselineDiffCI[1])}
		r.VsBaselineDiffCI95 = &v
	}
	return nil
}
