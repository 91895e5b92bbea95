package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// OpenMetrics writes the OpenMetrics text exposition
// (https://github.com/prometheus/OpenMetrics/blob/main/specification/OpenMetrics.md)
// of every row: gauges of each cell's statistics and of each trial's
// value, labelled with the campaign, the workload, the metric, its unit
// and direction, and the cell's factors (f_<factor>, dots and other
// characters a label name cannot have as "_"). A scraper, a push
// gateway or a file-based exporter takes it as it is.
func OpenMetrics(w io.Writer, rows []analysis.Row) error {
	families := []struct {
		name, help string
		samples    func(analysis.Row) []omSample
	}{
		{"ctrbench_mean", "Mean of a metric over a cell's trials.", func(r analysis.Row) []omSample { return []omSample{{value: r.Mean}} }},
		{"ctrbench_sd", "Standard deviation (n-1) of a metric over a cell's trials.", func(r analysis.Row) []omSample {
			if r.N < 2 {
				return nil
			}
			return []omSample{{value: r.SD}}
		}},
		{"ctrbench_ci95_low", "Lower end of the 95% confidence interval of the mean.", func(r analysis.Row) []omSample {
			if r.N < 2 {
				return nil
			}
			return []omSample{{value: r.CI95[0]}}
		}},
		{"ctrbench_ci95_high", "Upper end of the 95% confidence interval of the mean.", func(r analysis.Row) []omSample {
			if r.N < 2 {
				return nil
			}
			return []omSample{{value: r.CI95[1]}}
		}},
		{"ctrbench_trials", "Trials the statistics are of.", func(r analysis.Row) []omSample { return []omSample{{value: float64(r.N)}} }},
		{"ctrbench_vs_baseline_ratio", "Difference from the baseline cell as a fraction of its mean.", func(r analysis.Row) []omSample {
			if r.VsBaselinePct == nil {
				return nil
			}
			return []omSample{{value: *r.VsBaselinePct / 100}}
		}},
		{"ctrbench_trial_value", "A metric's value in one trial (seq: its place in the run order).", func(r analysis.Row) []omSample {
			out := make([]omSample, 0, len(r.Values))
			for i, v := range r.Values {
				s := omSample{value: v}
				if i < len(r.Seqs) {
					s.extra = [][2]string{{"seq", strconv.Itoa(r.Seqs[i])}}
				}
				out = append(out, s)
			}
			return out
		}},
	}
	var b strings.Builder
	for _, f := range families {
		fmt.Fprintf(&b, "# TYPE %s gauge\n# HELP %s %s\n", f.name, f.name, f.help)
		for _, r := range rows {
			for _, s := range f.samples(r) {
				b.WriteString(f.name)
				b.WriteString(omLabels(r, s.extra))
				b.WriteByte(' ')
				b.WriteString(omValue(s.value))
				b.WriteByte('\n')
			}
		}
	}
	b.WriteString("# EOF\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// omSample is one sample of a family: a value, and labels of its own
// beyond the row's.
type omSample struct {
	value float64
	extra [][2]string
}

// omLabels are a row's labels, then extra.
func omLabels(r analysis.Row, extra [][2]string) string {
	pairs := [][2]string{{"campaign", r.Campaign}, {"workload", r.Workload}, {"workload_type", r.WorkloadType},
		{"metric", r.Metric}, {"unit", r.Unit}, {"better", string(r.Better)}}
	keys := make([]string, 0, len(r.Cell))
	for k := range r.Cell {
		keys = append(keys, k)
	}
	analysis.SortFactors(keys)
	for _, k := range keys {
		pairs = append(pairs, [2]string{"f_" + omName(k), r.Cell[k]})
	}
	pairs = append(pairs, extra...)
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p[0] + `="` + omEscape(p[1]) + `"`
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// omName is s as a label name: letters, digits and "_".
func omName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// omEscape escapes a label value: backslash, double quote, newline.
func omEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func omValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
