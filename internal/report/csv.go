package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// CSV writes a header and one line per row. Factors become f:<factor>
// columns (sorted union), intervals two columns each, and null or NaN an
// empty field.
func CSV(w io.Writer, rows []analysis.Row) error {
	factors := factorNames(rows)
	header := []string{"campaign", "workload", "workload_type", "metric", "unit", "better"}
	for _, f := range factors {
		header = append(header, "f:"+f)
	}
	header = append(header, "n", "failed", "mean", "sd", "rsd_pct", "ci95_low", "ci95_high",
		"vs_baseline_pct", "vs_baseline_low", "vs_baseline_high", "p_value", "significant",
		"vs_baseline_method", "baseline", "ir", "ir_low", "ir_high", "ir_excludes_0", "flagged",
		"vs_baseline_diff", "vs_baseline_diff_low", "vs_baseline_diff_high", "vs_baseline_note", "outliers",
		"target_rci_pct", "rci_pct", "target_reached", "mde_pct", "below_noise_floor",
		"slowdown", "slowdown_low", "slowdown_high")
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	for _, r := range rows {
		rec := []string{r.Campaign, r.Workload, r.WorkloadType, r.Metric, r.Unit, string(r.Better)}
		for _, f := range factors {
			rec = append(rec, r.Cell[f])
		}
		var vsLow, vsHigh string
		if r.VsBaselineCI95 != nil {
			vsLow, vsHigh = csvNum(r.VsBaselineCI95[0]), csvNum(r.VsBaselineCI95[1])
		}
		var irLow, irHigh string
		if r.IRCI95 != nil {
			irLow, irHigh = csvNum(r.IRCI95[0]), csvNum(r.IRCI95[1])
		}
		var sdLow, sdHigh string
		if r.SlowdownCI95 != nil {
			sdLow, sdHigh = csvNum(r.SlowdownCI95[0]), csvNum(r.SlowdownCI95[1])
		}
		var diffLow, diffHigh string
		if r.VsBaselineDiffCI95 != nil {
			diffLow, diffHigh = csvNum(r.VsBaselineDiffCI95[0]), csvNum(r.VsBaselineDiffCI95[1])
		}
		seqs := make([]string, len(r.Outliers))
		for i, s := range r.Outliers {
			seqs[i] = strconv.Itoa(s)
		}
		rec = append(rec, strconv.Itoa(r.N), strconv.Itoa(r.Failed),
			csvNum(r.Mean), csvNum(r.SD), csvNum(r.RSDPct), csvNum(r.CI95[0]), csvNum(r.CI95[1]),
			csvPtr(r.VsBaselinePct), vsLow, vsHigh, csvPtr(r.PValue), csvBool(r.Significant),
			r.VsBaselineMethod, strconv.FormatBool(r.Baseline),
			csvPtr(r.IR), irLow, irHigh, csvBool(r.IRExcludes0), strconv.Itoa(r.Flagged),
			csvPtr(r.VsBaselineDiff), diffLow, diffHigh, r.VsBaselineNote, strings.Join(seqs, " "),
			csvPtr(r.TargetRCIPct), csvPtr(r.RCIPct), csvBool(r.Reached), csvPtr(r.MDEPct), csvBool(r.BelowNoiseFloor),
			csvPtr(r.Slowdown), sdLow, sdHigh)
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write csv row: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// csvNum keeps full precision: CSV is read by programs, not people.
func csvNum(v float64) string {
	if !finite(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func csvPtr(v *float64) string {
	if v == nil {
		return ""
	}
	return csvNum(*v)
}

func csvBool(b *bool) string {
	if b == nil {
		return ""
	}
	return strconv.FormatBool(*b)
}
