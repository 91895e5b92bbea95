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
// neither telemetry nor a neighbour's. A target whose type lists several
// matrix metrics (workload.Spec.MatrixMetrics: STREAM's four kernels, as
// S0's Table IV) has one more pair of grids per further metric: the
// second holds every target's second matrix metric, and so on, and each
// title names its rows' metrics.
func Matrix(w io.Writer, rows []analysis.Row) error {
	m := collectMatrices(rows)
	if len(m.cases) == 0 {
		_, err := fmt.Fprintln(w, "no cell ran a target beside neighbours (factor neighbour): nothing to put in a matrix")
		return err
	}
	for _, ck := range m.cases {
		for rank := 0; rank < m.ranks; rank++ {
			if err := m.write(w, ck, rank); err != nil {
				return err
			}
		}
	}
	return nil
}

// matrices are the entries of S0's grids: by case, target, neighbour and
// rank among the target's matrix metrics (0: its headline).
type matrices struct {
	targets           []string
	metrics           map[string][]analysis.Row // by target: its matrix metrics, the headline first
	cells             map[matrixKey]analysis.Row
	cases, neighbours []string
	ranks             int // the most matrix metrics of a target
}

type matrixKey struct {
	caseKey, target, neighbour string
	rank                       int
}

func collectMatrices(rows []analysis.Row) matrices {
	m := matrices{cells: map[matrixKey]analysis.Row{}}
	m.targets, m.metrics = analysis.MatrixMetrics(rows)
	seenCase, seenAnt := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		rank, ok := analysis.MatrixRank(m.metrics, r)
		if !ok {
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
			m.cases = append(m.cases, ck)
		}
		if !seenAnt[ant] {
			seenAnt[ant] = true
			m.neighbours = append(m.neighbours, ant)
		}
		m.cells[matrixKey{ck, r.Workload, ant, rank}] = r
		m.ranks = max(m.ranks, rank+1)
	}
	sort.Strings(m.cases)
	return m
}

// write writes a case's IR grid and mean [SD] grid of the targets' rank-th
// matrix metric; nothing when no target has one measured in the case.
func (m matrices) write(w io.Writer, ck string, rank int) error {
	var targets, labels []string
	measured := false
	for _, t := range m.targets {
		if len(m.metrics[t]) <= rank {
			continue
		}
		targets = append(targets, t)
		labels = append(labels, t+" "+m.metrics[t][rank].Metric)
		for _, a := range m.neighbours {
			_, ok := m.cells[matrixKey{ck, t, a, rank}]
			measured = measured || ok
		}
	}
	if !measured {
		return nil
	}
	title := ck
	if m.ranks > 1 {
		title += " — " + strings.Join(labels, ", ")
	}
	fmt.Fprintf(w, "Interference ratio — %s\n(rows: target and its metric; columns: neighbours; IR [95%% CI], negative = worse, * = interval excludes 0)\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "target\t%s\n", strings.Join(m.neighbours, "\t"))
	for i, t := range targets {
		line := []string{labels[i]}
		for _, a := range m.neighbours {
			r, ok := m.cells[matrixKey{ck, t, a, rank}]
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
	fmt.Fprintf(w, "\nMean [SD] — %s\n", title)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "target\talone (baseline)\t%s\n", strings.Join(m.neighbours, "\t"))
	for i, t := range targets {
		// The alone column is the case's own baseline (a cpus or
		// platform factor beside the neighbour changes the target
		// alone too), as its rows' IR were computed against.
		line := []string{labels[i], ""}
		for _, a := range m.neighbours {
			if r, ok := m.cells[matrixKey{ck, t, a, rank}]; ok && r.Base != nil {
				line[1] = summarySD(*r.Base)
				break
			}
		}
		for _, a := range m.neighbours {
			if r, ok := m.cells[matrixKey{ck, t, a, rank}]; ok {
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
	_, err := fmt.Fprintln(w)
	return err
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
