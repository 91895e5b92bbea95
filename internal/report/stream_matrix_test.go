package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/advice"
	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/figure"
	"github.com/ctrbench/ctrbench/internal/report"
	"github.com/ctrbench/ctrbench/internal/result"
	_ "github.com/ctrbench/ctrbench/internal/userkinds" // registers exec and service
	_ "github.com/ctrbench/ctrbench/internal/workloads" // mem.stream's spec: its matrix metrics
)

// streamColocation is S0's memory target S (mem.stream) beside itself in
// one container and in two, against S alone: its five metrics per cell,
// copy untouched by the neighbour, triad halved.
func streamColocation() []analysis.Row {
	alone := []float64{10, 10.1, 9.9}
	var series []analysis.Series
	cells := []struct {
		id                   int
		neighbour, packaging string
	}{{1, "none", ""}, {2, "S", "same-container"}, {3, "S", "separate-containers"}}
	for _, c := range cells {
		cell := map[string]string{"neighbour": c.neighbour, "cpus": "1"}
		if c.packaging != "" {
			cell["packaging"] = c.packaging
		}
		for _, m := range []string{"copy", "scale", "add", "triad", "array_size"} {
			vals := alone
			if c.neighbour != "none" && m == "triad" {
				vals = []float64{5, 5.05, 4.95}
			}
			s := analysis.Series{Identity: analysis.Identity{Campaign: "s0", Workload: "S", WorkloadType: "mem.stream", ID: result.Observation{Metric: m}.ID(),
				Unit: "GB/s", Better: result.Higher, Cell: cell, CellID: c.id}, Values: vals, IsBaseline: c.neighbour == "none"}
			if !s.IsBaseline {
				s.Baseline, s.Interference = alone, true
			}
			series = append(series, s)
		}
	}
	return analysis.Rows(series)
}

// Issue 29: S0's tables show STREAM's four kernels; report --matrix and
// the HTML report's heatmaps show one matrix per kernel in each case, the
// copy one first, while the placement advice judges S by copy alone.
func TestStreamMatrixShowsFourKernels(t *testing.T) {
	rows := streamColocation()
	kernels := []string{"copy", "scale", "add", "triad"}
	cases := []string{"cpus=1 packaging=same-container", "cpus=1 packaging=separate-containers"}

	var b bytes.Buffer
	if err := report.Matrix(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "Interference ratio — "); n != 4*len(cases) {
		t.Errorf("%d IR matrices, want 4 per case:\n%s", n, out)
	}
	for _, ck := range cases {
		for _, k := range kernels {
			title := "Interference ratio — " + ck + " — S " + k
			if !strings.Contains(out, title+"\n") || !strings.Contains(out, "\nS "+k+"  ") {
				t.Errorf("no %s matrix for %s:\n%s", k, ck, out)
			}
		}
	}
	if !strings.Contains(out, "S triad  -0.500 [") || strings.Contains(out, "array_size") {
		t.Errorf("triad halved, array_size no matrix of its own:\n%s", out)
	}

	secs := figure.Build(rows, nil)
	if secs[0].ID != "interference" || len(secs[0].Figures) != 4*len(cases) {
		t.Fatalf("interference section %+v: want 4 heatmaps per case", secs[0])
	}
	ids := map[string]bool{}
	for i, f := range secs[0].Figures {
		k := kernels[i%4]
		if f.Kind != figure.Heatmap || len(f.Heat.Rows) != 1 || f.Heat.Rows[0] != "S "+k || ids[f.ID] {
			t.Errorf("heatmap %d %q (%s): want S %s, a new id", i, f.Title, f.ID, k)
		}
		if !strings.HasSuffix(f.Title, " — S "+k) {
			t.Errorf("heatmap %d title %q names no kernel", i, f.Title)
		}
		ids[f.ID] = true
	}

	a, err := advice.Advise("s0", rows, advice.Options{MaxSlowdown: 0.10})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Metrics) != 1 || a.Metrics[0] != "copy" {
		t.Errorf("advice metrics %v: want copy alone", a.Metrics)
	}
	for _, j := range a.Judgements {
		if j.Metric != "copy" || j.Verdict != advice.Within {
			t.Errorf("judgement %+v: want copy, within (triad, halved, is not judged)", j)
		}
	}
}
