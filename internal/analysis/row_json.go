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
	FlaggedMean      *num              `json:"flagged_mean,omitempty"`
	FlaggedSeqs      []int             `json:"flagged_seqs,omitempty"`
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
	Slowdown         *num              `json:"slowdown,omitempty"`
	SlowdownCI95     *[2]num           `json:"slowdown_ci95,omitempty"`
	NotComparable    string            `json:"not_comparable,omitempty"`
	FewTrials        bool              `json:"few_trials,omitempty"`
}

// MarshalJSON encodes r with NaN and Inf as null.
func (r Row) MarshalJSON() ([]byte, error) {
	w := wireRow{
		Campaign: r.Campaign, Workload: r.Workload, WorkloadType: r.WorkloadType,
		Metric: r.Metric, Unit: r.Unit, Better: r.Better, Cell: r.Cell,
		N: r.N, Failed: r.Failed, Flagged: r.Flagged, FlaggedMean: toNum(r.FlaggedMean), FlaggedSeqs: r.FlaggedSeqs,
		Mean: num(r.Mean), SD: num(r.SD), RSDPct: num(r.RSDPct),
		CI95:        [2]num{num(r.CI95[0]), num(r.CI95[1])},
		Significant: r.Significant, VsBaselineMethod: r.VsBaselineMethod,
		Baseline:      r.Baseline,
		VsBaselinePct: toNum(r.VsBaselinePct), VsBaselineCI95: toNum2(r.VsBaselineCI95), PValue: toNum(r.PValue),
		IR: toNum(r.IR), IRCI95: toNum2(r.IRCI95), IRExcludes0: r.IRExcludes0,
		VsBaselineNote: r.VsBaselineNote, VsBaselineDiff: toNum(r.VsBaselineDiff), VsBaselineDiffCI: toNum2(r.VsBaselineDiffCI95),
		Outliers: r.Outliers, TargetRCIPct: toNum(r.TargetRCIPct), RCIPct: toNum(r.RCIPct), Reached: r.Reached,
		MDEPct: toNum(r.MDEPct), BelowNoiseFloor: r.BelowNoiseFloor,
		Slowdown: toNum(r.Slowdown), SlowdownCI95: toNum2(r.SlowdownCI95),
		NotComparable: r.NotComparable, FewTrials: r.FewTrials,
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
		N: w.N, Failed: w.Failed, Flagged: w.Flagged, FlaggedMean: fromNum(w.FlaggedMean), FlaggedSeqs: w.FlaggedSeqs,
		Mean: float64(w.Mean), SD: float64(w.SD), RSDPct: float64(w.RSDPct),
		CI95:        [2]float64{float64(w.CI95[0]), float64(w.CI95[1])},
		Significant: w.Significant, VsBaselineMethod: w.VsBaselineMethod,
		Baseline:      w.Baseline,
		VsBaselinePct: fromNum(w.VsBaselinePct), VsBaselineCI95: fromNum2(w.VsBaselineCI95), PValue: fromNum(w.PValue),
		IR: fromNum(w.IR), IRCI95: fromNum2(w.IRCI95), IRExcludes0: w.IRExcludes0,
		VsBaselineNote: w.VsBaselineNote, VsBaselineDiff: fromNum(w.VsBaselineDiff), VsBaselineDiffCI95: fromNum2(w.VsBaselineDiffCI),
		Outliers: w.Outliers, TargetRCIPct: fromNum(w.TargetRCIPct), RCIPct: fromNum(w.RCIPct), Reached: w.Reached,
		MDEPct: fromNum(w.MDEPct), BelowNoiseFloor: w.BelowNoiseFloor,
		Slowdown: fromNum(w.Slowdown), SlowdownCI95: fromNum2(w.SlowdownCI95),
		NotComparable: w.NotComparable, FewTrials: w.FewTrials,
	}
	return nil
}

func toNum(p *float64) *num {
	if p == nil {
		return nil
	}
	v := num(*p)
	return &v
}

func toNum2(p *[2]float64) *[2]num {
	if p == nil {
		return nil
	}
	return &[2]num{num(p[0]), num(p[1])}
}

func fromNum(p *num) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func fromNum2(p *[2]num) *[2]float64 {
	if p == nil {
		return nil
	}
	return &[2]float64{float64(p[0]), float64(p[1])}
}
