package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
)

// Compare writes campaign B against campaign A, metric by metric, as a
// table or JSON.
func Compare(w io.Writer, c analysis.Comparison, format string) error {
	if format == "json" {
		return compareJSON(w, c)
	}
	fmt.Fprintf(w, "B %s against A %s, noise threshold ±%g%%\n\n", c.B.ID, c.A.ID, c.Threshold)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tcell\tmetric\tA mean (n)\tB mean (n)\tchange [95% CI]\tp\tverdict")
	for _, ch := range c.Changes {
		change := "-"
		if finite(ch.Pct) {
			change = signed(ch.Pct) + "%"
			if finite(ch.CI95[0]) {
				change += " " + interval(ch.CI95, signed)
			}
		}
		p := "-"
		if finite(ch.PValue) {
			p = strconv.FormatFloat(ch.PValue, 'g', 2, 64)
		}
		verdict := ch.Verdict
		if ch.Note != "" {
			verdict += " (" + ch.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s [%s]\t%s (%d)\t%s (%d)\t%s\t%s\t%s\n", ch.Workload, result.FactorString(ch.Cell), ch.Metric, ch.Unit,
			Sig(ch.A.Mean), ch.A.N, Sig(ch.B.Mean), ch.B.N, change, p, verdict)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	for _, k := range c.OnlyA {
		fmt.Fprintf(w, "only in A: %s\n", k)
	}
	for _, k := range c.OnlyB {
		fmt.Fprintf(w, "only in B: %s\n", k)
	}
	_, err := fmt.Fprintf(w, "\n%d metric(s) regressed beyond ±%g%%. change: B relative to A's mean; verdict: improved/regressed when the interval excludes 0 and the change is at least the threshold, within threshold when it excludes 0 but the change is smaller, no change when it includes 0.\n",
		c.Regressed, c.Threshold)
	return err
}

func compareJSON(w io.Writer, c analysis.Comparison) error {
	type change struct {
		Workload string            `json:"workload"`
		Cell     map[string]string `json:"cell"`
		Metric   string            `json:"metric"`
		Unit     string            `json:"unit"`
		Better   result.Better     `json:"better"`
		AMean    *float64          `json:"a_mean"`
		AN       int               `json:"a_n"`
		BMean    *float64          `json:"b_mean"`
		BN       int               `json:"b_n"`
		Pct      *float64          `json:"change_pct"`
		CI95     [2]*float64       `json:"change_ci95"`
		PValue   *float64          `json:"p_value"`
		Verdict  string            `json:"verdict"`
		Note     string            `json:"note,omitempty"`
	}
	out := struct {
		A         string   `json:"a"`
		B         string   `json:"b"`
		Threshold float64  `json:"threshold_pct"`
		Regressed int      `json:"regressed"`
		Changes   []change `json:"changes"`
		OnlyA     []string `json:"only_a,omitempty"`
		OnlyB     []string `json:"only_b,omitempty"`
	}{A: c.A.ID, B: c.B.ID, Threshold: c.Threshold, Regressed: c.Regressed, Changes: []change{}, OnlyA: c.OnlyA, OnlyB: c.OnlyB}
	for _, ch := range c.Changes {
		out.Changes = append(out.Changes, change{Workload: ch.Workload, Cell: ch.Cell, Metric: ch.Metric, Unit: ch.Unit, Better: ch.Better,
			AMean: finitePtr(ch.A.Mean), AN: ch.A.N, BMean: finitePtr(ch.B.Mean), BN: ch.B.N, Pct: finitePtr(ch.Pct),
			CI95: [2]*float64{finitePtr(ch.CI95[0]), finitePtr(ch.CI95[1])}, PValue: finitePtr(ch.PValue), Verdict: ch.Verdict, Note: ch.Note})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
