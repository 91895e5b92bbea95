package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/stats"
)

// Matrix writes S0's views of a co-location campaign (Jha et al. 2018,
// Tables III–VI): for each case — the cell's levels other than the
// neighbour — one matrix with targets as rows and neighbours as columns,
// holding the IR of each target's headline metric with its 95% interval,
// then the same grid as mean [SD], with the target alone as the first
// column. The headline metric of a target is its first metric that is
// neither telemetry nor a neighbour's.
func Matrix(w io.Writer, rows []analysis.Row) error {
	targets, headline := analysis.Headlines(rows)
	type key struct{ caseKey, target, neighbour string }
	cells := map[key]analysis.Row{}
	var cases, neighbours []string
	seenCase, seenAnt := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		if h, ok := headline[r.Workload]; !ok || !analysis.SameMetric(h.ID, r.ID) {
			continue
		}
		ant, ok := r.Cell["neighbour"]
		if !ok {
			continue
		}
		if ant == "none" {
			continue // the target alone: each case's own, through its rows' Base
		}
		ck := analysis.CaseOf(r.Cell)
		if !seenCase[ck] {
			seenCase[ck] = true
			cases = append(cases, ck)
		}
		if !seenAnt[ant] {
			seenAnt[ant] = true
			neighbours = append(neighbours, ant)
		}
		cells[key{ck, r.Workload, ant}] = r
	}
	if len(cases) == 0 {
		_, err := fmt.Fprintln(w, "no cell ran a target beside neighbours (factor neighbour): nothing to put in a matrix")
		return err
	}
	sort.Strings(cases)
	for _, ck := range cases {
		fmt.Fprintf(w, "Interference ratio — %s\n(rows: target and its metric; columns: neighbours; IR [95%% CI], negative = worse, * = interval excludes 0)\n", ck)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "target\t%s\n", strings.Join(neighbours, "\t"))
		for _, t := range targets {
			line := []string{t + " " + headline[t].Metric}
			for _, a := range neighbours {
				r, ok := cells[key{ck, t, a}]
				if !ok {
					line = append(line, "")
					continue
				}
				line = append(line, irCell(r))
			}
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nMean [SD] — %s\n", ck)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "target\talone (baseline)\t%s\n", strings.Join(neighbours, "\t"))
		for _, t := range targets {
			// The alone column is the case's own baseline (a cpus or
			// platform factor beside the neighbour changes the target
			// alone too), as its rows' IR were computed against.
			line := []string{t + " " + headline[t].Metric, ""}
			for _, a := range neighbours {
				if r, ok := cells[key{ck, t, a}]; ok && r.Base != nil {
					line[1] = summarySD(*r.Base)
					break
				}
			}
			for _, a := range neighbours {
				if r, ok := cells[key{ck, t, a}]; ok {
					line = append(line, meanSD(r))
				} else {
					line = append(line, "")
				}
			}
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

func meanSD(r analysis.Row) string {
	return summarySD(stats.Summary{N: r.N, Mean: r.Mean, SD: r.SD})
}

// summarySD renders "mean [SD] n=N".
func summarySD(s stats.Summary) string {
	if s.N == 0 {
		return "-"
	}
	out := Sig(s.Mean)
	if finite(s.SD) {
		out += " [" + Sig(s.SD) + "]"
	}
	return out + " n=" + strconv.Itoa(s.N)
}
