package figure

import (
	"math"
	"reflect"
	"testing"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/result"
)

// row is a trial-scope measure of workload w in cell id.
func row(w, metric string, id int, cell map[string]string, mean float64) analysis.Row {
	return analysis.Row{
		Identity: analysis.Identity{
			Workload: w, WorkloadType: "x." + w, Metric: metric, Unit: "u", Better: result.Higher,
			ID:   result.MetricID{Metric: metric, Scope: result.ScopeTrial, Kind: result.KindMeasure},
			Cell: cell, CellID: id,
		},
		Trials: analysis.Trials{
			N: 3, Values: []float64{mean - 1, mean, mean + 1}, Seqs: []int{id*10 + 1, id*10 + 2, id*10 + 3},
		},
		Stats: analysis.Stats{Mean: mean, SD: 1, CI95: [2]float64{mean - 1, mean + 1}},
	}
}

func pct(v float64) *float64 { return &v }

func figureShapes(secs []Section) map[string][3]int {
	out := map[string][3]int{}
	for _, s := range secs {
		for _, f := range s.Figures {
			out[f.ID] = [3]int{len(f.Series), f.Points(), len(kindName(f.Kind))}
		}
	}
	return out
}

func kindName(k Kind) string { return string(k) }

func figureByID(t *testing.T, secs []Section, id string) Figure {
	t.Helper()
	for _, s := range secs {
		for _, f := range s.Figures {
			if f.ID == id {
				return f
			}
		}
	}
	t.Fatalf("no figure %s in %v", id, figureShapes(secs))
	return Figure{}
}

// Cells that differ in levels only: bars, one per cell, each with its
// trials and its difference from the baseline; a constant factor names
// nothing.
func TestBarsForLevels(t *testing.T) {
	a := row("cpu", "rate", 1, map[string]string{"platform": "native", "network": "host"}, 100)
	a.Baseline = true
	b := row("cpu", "rate", 2, map[string]string{"platform": "docker", "network": "host"}, 90)
	b.VsBaselinePct, b.VsBaselineCI95 = pct(-10), &[2]float64{-15, -5}
	sig := true
	b.Significant = &sig
	secs := Build([]analysis.Row{a, b}, nil)
	if len(secs) != 1 || !reflect.DeepEqual(secs[0].Factors, []string{"platform"}) {
		t.Fatalf("sections %+v: want one, varying in platform only", secs)
	}
	f := figureByID(t, secs, "cpu-rate")
	if f.Kind != Bars || len(f.Series) != 1 || len(f.Series[0].Points) != 2 {
		t.Fatalf("figure %+v: want bars, one series of two", f)
	}
	p := f.Series[0].Points[1]
	if p.Label != "platform=docker" || p.Delta != "-10.0% [-15.0, -5.0] *" || !p.Significant || len(p.Trials) != 3 || p.Trials[2].Seq != 23 || p.Lo != 89 || p.Hi != 91 {
		t.Errorf("docker's bar %+v", p)
	}
}

// A numeric factor spanning decades: lines on a log axis, one per level
// of the other factor, with the ratio to the baseline beside; a bundle's
// platform, which the bundle sets, is not a line of its own.
func TestLinesOverANumericFactor(t *testing.T) {
	var rows []analysis.Row
	id := 0
	for _, layer := range []string{"reference", "docker"} {
		for i, size := range []string{"10", "100", "1000", "100000"} {
			id++
			plat := map[string]string{"reference": "native", "docker": "docker"}[layer]
			r := row("pp", "rps", id, map[string]string{"layer": layer, "platform": plat, "param.size": size}, 1000/float64(i+1))
			if layer == "docker" {
				r.VsBaselinePct, r.VsBaselineCI95 = pct(-5), &[2]float64{-9, -1}
			} else {
				r.Baseline = true
			}
			rows = append(rows, r)
		}
	}
	secs := Build(rows, nil)
	if got := secs[0].Factors; !reflect.DeepEqual(got, []string{"layer", "param.size"}) {
		t.Errorf("display factors %v: want layer and param.size (platform follows from layer)", got)
	}
	f := figureByID(t, secs, "pp-rps-by-param-size")
	if f.Kind != Lines || !f.LogX || len(f.Series) != 2 || f.Points() != 8 || f.Series[0].Name != "layer=reference" || !f.Series[0].Baseline {
		t.Errorf("lines %+v", f)
	}
	if xs := []float64{f.Series[1].Points[0].X, f.Series[1].Points[3].X}; xs[0] != 10 || xs[1] != 100000 {
		t.Errorf("x %v: want the sizes in order", xs)
	}
	r := figureByID(t, secs, "pp-rps-by-param-size-ratio")
	if len(r.Series) != 1 || r.Points() != 4 || r.Ref != 1 || math.Abs(r.Series[0].Points[0].Y-0.95) > 1e-12 || math.Abs(r.Series[0].Points[0].Lo-0.91) > 1e-12 {
		t.Errorf("ratio %+v: want docker's 4 points at 0.95 [0.91, 0.99]", r)
	}
}

// More lines than a figure shows: one figure per level of the first
// other factor (small multiples).
func TestSmallMultiples(t *testing.T) {
	var rows []analysis.Row
	id := 0
	for _, net := range []string{"bridge", "macvlan"} {
		for _, pin := range []string{"none", "same", "separate", "other"} {
			for _, pairs := range []string{"1", "2", "5"} {
				id++
				rows = append(rows, row("s", "tput", id, map[string]string{"network": net, "pinning": pin, "pairs": pairs}, float64(id)))
			}
		}
	}
	secs := Build(rows, nil)
	var lines []Figure
	for _, f := range secs[0].Figures {
		if f.Kind == Lines {
			lines = append(lines, f)
		}
	}
	if len(lines) != 2 || len(lines[0].Series) != 4 || lines[0].Title != "s — tput by pairs — network=bridge" {
		t.Errorf("got %d line figures (%v): want 2 of 4 lines each", len(lines), figureShapes(secs))
	}
}

// Each pair's own value beside the trial's: the mean over pairs and the
// range from the lowest pair to the highest.
func TestPerPair(t *testing.T) {
	var rows []analysis.Row
	for id, n := range map[int]string{1: "1", 2: "2", 3: "5"} {
		rows = append(rows, row("s", "tput", id, map[string]string{"pairs": n}, 10))
	}
	for i, v := range []float64{2, 4, 9} {
		r := row("s", "tput", 3, map[string]string{"pairs": "5"}, v)
		r.ID = result.MetricID{Metric: "tput", Scope: result.ScopePair, Kind: result.KindMeasure, Index: i + 1}
		rows = append(rows, r)
	}
	secs := Build(rows, nil)
	f := figureByID(t, secs, "s-tput-by-pairs-per-pair")
	p := f.Series[0].Points[0]
	if f.Points() != 1 || p.Y != 5 || p.Lo != 2 || p.Hi != 9 || f.Band != "range over pairs" {
		t.Errorf("per pair %+v: want 5 in [2, 9]", f)
	}
	// Issue 24: the point's n counted pairs; it is the trials (each pair's
	// row has one value per trial), with the pairs apart.
	if p.N != rows[3].N || p.Copies != 3 {
		t.Errorf("per pair point n %d copies %d: want the trials (%d) and 3 pairs", p.N, p.Copies, rows[3].N)
	}
}

// S1's parents × children: the bundles that set children per parent are
// the cells with two numeric factors; their heatmap has a row per number
// of children and is not split by the bundle's name.
func TestHeatmapOverTwoNumbers(t *testing.T) {
	var rows []analysis.Row
	id := 0
	for _, inst := range []string{"1", "2", "4"} {
		id++
		rows = append(rows, row("create", "makespan", id, map[string]string{"entity": "container", "instances": inst}, 1))
	}
	for _, ch := range []string{"2", "4"} {
		for _, inst := range []string{"4", "8", "16"} {
			id++
			rows = append(rows, row("create", "makespan", id, map[string]string{"entity": "nested-" + ch, "children": ch, "instances": inst}, float64(id)))
		}
	}
	secs := Build(rows, nil)
	var heat []Figure
	for _, f := range secs[0].Figures {
		if f.Kind == Heatmap {
			heat = append(heat, f)
		}
	}
	if len(heat) != 1 {
		t.Fatalf("heatmaps %v: want one", figureShapes(secs))
	}
	h := heat[0].Heat
	if !reflect.DeepEqual(h.Rows, []string{"2", "4"}) || !reflect.DeepEqual(h.Cols, []string{"4", "8", "16"}) || heat[0].Points() != 6 || h.Cells[1][2].Value != 9 {
		t.Errorf("heatmap rows %v cols %v, %d points: want children 2,4 × instances 4,8,16", h.Rows, h.Cols, heat[0].Points())
	}
	// Issue 24: the interval under each value printed "[lo, hi]" with
	// nothing saying what it was.
	if h.SubLabel != "95% CI" {
		t.Errorf("heatmap sub label %q, want 95%% CI", h.SubLabel)
	}
}

// A co-location campaign: S0's matrix of IR per case comes first, each
// entry with its interval and the mark where it excludes 0; a metric 0
// everywhere is named, not drawn.
func TestInterferenceMatrix(t *testing.T) {
	alone := row("L", "gflops", 1, map[string]string{"neighbour": "none", "packaging": "same-container"}, 10)
	alone.Baseline = true
	withS := row("L", "gflops", 2, map[string]string{"neighbour": "S", "packaging": "same-container"}, 6)
	ir, ci, ex := -0.4, [2]float64{-0.5, -0.3}, true
	withS.IR, withS.IRCI95, withS.IRExcludes0 = &ir, &ci, &ex
	zero := row("L", "errors", 1, map[string]string{"neighbour": "none", "packaging": "same-container"}, 0)
	zero.SD = 0
	zero2 := zero
	zero2.CellID, zero2.Cell = 2, withS.Cell
	secs := Build([]analysis.Row{alone, withS, zero, zero2}, nil)
	if secs[0].ID != "interference" || len(secs[0].Figures) != 1 {
		t.Fatalf("first section %+v: want the interference matrices", secs[0])
	}
	h := secs[0].Figures[0].Heat
	c := h.Cells[0][0]
	if !h.Diverging || h.Rows[0] != "L gflops" || h.Cols[0] != "S" || !c.Mark || c.Text != "-0.400 *" || c.Sub != "[-0.50, -0.30]" || h.SubLabel != "95% CI" {
		t.Errorf("matrix %+v entry %+v", h, c)
	}
	if !reflect.DeepEqual(secs[1].Zero, []string{"errors"}) {
		t.Errorf("zero metrics %v: want errors", secs[1].Zero)
	}
}

// CDFs: one line per cell, on a log axis when values span a factor of 5.
func TestCDF(t *testing.T) {
	r := row("rr", "p50", 1, map[string]string{"platform": "native"}, 1)
	r2 := row("rr", "p50", 2, map[string]string{"platform": "docker"}, 1)
	cdfs := []analysis.CDF{
		{Workload: "rr", Histogram: "latency", Unit: "ms", Cell: r.Cell, CellID: 1, Count: 100, Points: []analysis.QuantilePoint{{Q: 0, Value: 0.1}, {Q: 0.5, Value: 0.2}, {Q: 1, Value: 3}}},
		{Workload: "rr", Histogram: "latency", Unit: "ms", Cell: r2.Cell, CellID: 2, Count: 90, Points: []analysis.QuantilePoint{{Q: 0, Value: 0.1}, {Q: 1, Value: 0.4}}},
	}
	secs := Build([]analysis.Row{r, r2}, cdfs)
	var f Figure
	for _, x := range secs[0].Figures {
		if x.Kind == CDF {
			f = x
		}
	}
	if len(f.Series) != 2 || f.Points() != 5 || !f.LogX || f.Series[0].Name != "platform=native (n=100)" {
		t.Errorf("CDF %+v", f)
	}
}

func TestNumber(t *testing.T) {
	for s, want := range map[string]float64{"16": 16, "0.5": 0.5, "128KiB": 131072, "5MB": 5e6} {
		if v, ok := Number(s); !ok || v != want {
			t.Errorf("Number(%q) = %v, %v", s, v, ok)
		}
	}
	for _, s := range []string{"none", "bridge", "", "1gbit"} {
		if _, ok := Number(s); ok {
			t.Errorf("Number(%q) is a number", s)
		}
	}
}
